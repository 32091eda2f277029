//! Generated documentation kept in step with the code: one switch, one behaviour, for every
//! generated doc set (`docs/rules`, `docs/findings`, the tables in `docs/hardware.md`, …).
//!
//! A test builds the expected text and calls [`check_dir`] or [`check_region`]. Without the
//! switch the call panics when the checked-in text differs, naming the command that fixes it;
//! with `TPUPORT_UPDATE_DOCS` set to a non-empty value it rewrites the files instead (each one
//! atomically, and in a folder it removes generated `.md` files that no longer have a source).

use std::path::Path;

/// Environment variable that makes the docs tests rewrite the generated files instead of
/// comparing them.
pub const UPDATE_DOCS_ENV: &str = "TPUPORT_UPDATE_DOCS";

/// True when [`UPDATE_DOCS_ENV`] is set to a non-empty value.
#[must_use]
pub fn update_requested() -> bool {
    std::env::var_os(UPDATE_DOCS_ENV).is_some_and(|v| !v.is_empty())
}

/// Writes `text` to `path` through a temporary file in the same folder and a rename.
fn write_replacing(path: &Path, text: &str) {
    let name = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&tmp, text).unwrap_or_else(|e| panic!("{}: {e}", tmp.display()));
    std::fs::rename(&tmp, path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// The `.md` files directly in `dir` (names only), sorted.
fn markdown_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "md"))
                .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Compares the folder `dir` with the generated `files` ((name, contents) pairs, all `.md`):
/// every file must exist with exactly that text and no other `.md` file may be there. With
/// the switch set, rewrites the folder to match instead. `regenerate` is the command quoted in
/// the failure message.
pub fn check_dir(dir: &Path, files: &[(String, String)], regenerate: &str) {
    if update_requested() {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for name in markdown_files(dir) {
            if !files.iter().any(|(n, _)| *n == name) {
                let p = dir.join(&name);
                std::fs::remove_file(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            }
        }
        for (name, text) in files {
            write_replacing(&dir.join(name), text);
        }
        return;
    }
    let stale: Vec<&str> = files
        .iter()
        .filter(|(name, text)| {
            std::fs::read_to_string(dir.join(name)).ok().as_deref() != Some(text.as_str())
        })
        .map(|(name, _)| name.as_str())
        .collect();
    let extra: Vec<String> =
        markdown_files(dir).into_iter().filter(|n| !files.iter().any(|(f, _)| f == n)).collect();
    assert!(
        stale.is_empty() && extra.is_empty(),
        "{} is stale (differ or missing: {stale:?}; no longer generated: {extra:?}): run `{regenerate}`",
        dir.display()
    );
}

/// [`check_dir`] for a registry of stable codes: its folder (`docs/rules`, `docs/findings`, …)
/// under the repository root, its files, its regenerate command.
pub fn check_code_docs(docs: &tpuport_codes::CodeDocs) {
    let dir = crate::repo_root().join(docs.registry.docs_dir);
    check_dir(&dir, &docs.files(), docs.registry.regenerate);
}

/// Compares the part of the file `path` between the marker lines `begin` and `end` with `want`.
/// With the switch set, rewrites that part instead. `regenerate` is the command quoted in the
/// failure message.
pub fn check_region(path: &Path, begin: &str, end: &str, want: &str, regenerate: &str) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let start = text
        .find(begin)
        .unwrap_or_else(|| panic!("{}: no `{}` marker", path.display(), begin.trim_end()))
        + begin.len();
    let stop = text[start..].find(end).map(|i| start + i).unwrap_or_else(|| {
        panic!("{}: no `{}` marker after the first", path.display(), end.trim_end())
    });
    if text[start..stop] == *want {
        return;
    }
    if update_requested() {
        write_replacing(path, &format!("{}{want}{}", &text[..start], &text[stop..]));
        return;
    }
    panic!("{}: the generated part is out of date: run `{regenerate}`", path.display());
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    // The switch is read from the process environment, which tests share; these tests only run
    // the comparing half, and only when the switch is unset (as in CI).

    fn tmp(tag: &str) -> std::path::PathBuf {
        let d =
            std::env::temp_dir().join(format!("tpuport-testkit-docs-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn dir_check_names_stale_missing_and_extra_files() {
        if update_requested() {
            return;
        }
        let d = tmp("dir");
        std::fs::write(d.join("A.md"), "a\n").unwrap();
        std::fs::write(d.join("B.md"), "old\n").unwrap();
        std::fs::write(d.join("OLD.md"), "x\n").unwrap();
        std::fs::write(d.join("notes.txt"), "not generated\n").unwrap();
        let files = [
            ("A.md".to_owned(), "a\n".to_owned()),
            ("B.md".to_owned(), "new\n".to_owned()),
            ("C.md".to_owned(), "c\n".to_owned()),
        ];
        let err = std::panic::catch_unwind(|| check_dir(&d, &files, "make docs")).unwrap_err();
        let msg = err.downcast_ref::<String>().unwrap();
        assert!(msg.contains(r#"["B.md", "C.md"]"#) && msg.contains(r#"["OLD.md"]"#), "{msg}");
        assert!(msg.ends_with("run `make docs`"), "{msg}");
        std::fs::remove_file(d.join("OLD.md")).unwrap();
        std::fs::write(d.join("B.md"), "new\n").unwrap();
        std::fs::write(d.join("C.md"), "c\n").unwrap();
        check_dir(&d, &files, "make docs");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn region_check_compares_between_the_markers() {
        if update_requested() {
            return;
        }
        let d = tmp("region");
        let p = d.join("doc.md");
        std::fs::write(&p, "intro\n<!-- B -->\nold\n<!-- E -->\nend\n").unwrap();
        check_region(&p, "<!-- B -->\n", "<!-- E -->", "old\n", "make docs");
        let err = std::panic::catch_unwind(|| {
            check_region(&p, "<!-- B -->\n", "<!-- E -->", "new\n", "make docs");
        })
        .unwrap_err();
        assert!(err.downcast_ref::<String>().unwrap().contains("out of date: run `make docs`"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
