//! A code's documentation: the doc comment as Markdown ([`clean`]), its summary ([`summary`]),
//! its page and its registry's index ([`CodePage`], [`CodeDocs`]) — the files under `docs/<set>/`
//! and what `tpuport explain CODE` prints — and [`StableCode`], what all of that reads from a
//! code.

use std::fmt::Write as _;

use crate::Severity;

/// Markdown from a captured doc comment: strips the one space rustdoc keeps at the start of each
/// `///` line, trims, and ends with exactly one newline.
#[must_use]
pub fn clean(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for line in raw.lines() {
        out.push_str(line.strip_prefix(' ').unwrap_or(line));
        out.push('\n');
    }
    out.trim().to_owned() + "\n"
}

/// The first sentence of the first paragraph under `heading` (e.g. `## What it does`), with the
/// paragraph's lines joined by spaces. Empty when the heading is missing.
#[must_use]
pub fn summary(doc: &str, heading: &str) -> String {
    let Some((_, body)) = doc.split_once(heading) else {
        return String::new();
    };
    let para: String = body
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty() && !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join(" ");
    match para.find(". ") {
        Some(i) => para[..=i].to_owned(),
        None => para,
    }
}

/// One fact about a code, shown on its page after the family (`Status: stable`) and as a column
/// of the index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fact {
    /// Label on the page (`Default severity`).
    pub label: &'static str,
    /// Column header in the index (`Severity`).
    pub column: &'static str,
    /// Value on the page.
    pub value: String,
    /// Value in the index (often the same as `value`).
    pub short: String,
}

impl Fact {
    /// A fact with the same label and value on the page and in the index.
    #[must_use]
    pub fn new(label: &'static str, value: impl Into<String>) -> Fact {
        let value = value.into();
        Fact { label, column: label, short: value.clone(), value }
    }

    /// `Default severity: error` on the page, under `Severity` in the index.
    #[must_use]
    pub fn severity(severity: Severity) -> Fact {
        Fact {
            label: "Default severity",
            column: "Severity",
            value: severity.to_string(),
            short: severity.to_string(),
        }
    }
}

/// The documentation of one code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodePage {
    /// Stable code (`TPU101`).
    pub code: String,
    /// Kebab-case name (`dataloader-without-drop-last`).
    pub name: String,
    /// Title of the code's family.
    pub family: &'static str,
    /// Facts after the family, in order.
    pub facts: Vec<Fact>,
    /// The file that defines the rule, relative to the repository root.
    pub source: &'static str,
    /// The user documentation (Markdown, from [`clean`]).
    pub doc: String,
    /// One-line summary (from [`summary`]).
    pub summary: String,
}

impl CodePage {
    /// The page: title, family and facts, where it is derived from, then the doc.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# {} ({})\n", self.name, self.code);
        out.push_str("Family: ");
        out.push_str(self.family);
        for f in &self.facts {
            let _ = write!(out, " · {}: {}", f.label, f.value);
        }
        out.push_str("\n\n");
        let _ = writeln!(out, "Derived from `{}`.\n", self.source);
        out.push_str(&self.doc);
        out
    }
}

/// One set of codes: its families, its index page and where its files go.
#[derive(Debug)]
pub struct Registry {
    /// Short name (`lint`, `audit`), shown by `tpuport explain --format json`.
    pub name: &'static str,
    /// Title of the index page (`tpuport rules`).
    pub title: &'static str,
    /// Folder of the generated files, relative to the repository root (`docs/rules`).
    pub docs_dir: &'static str,
    /// The command that regenerates the files, quoted on the index page.
    pub regenerate: &'static str,
    /// The index page's second line (where the codes come from, how to read them).
    pub intro: &'static str,
    /// What the codes are called in the count line (`rules`, `codes`).
    pub noun: &'static str,
    /// The heading whose first sentence is a code's summary (`## What it does`).
    pub summary_heading: &'static str,
    /// Families in code order: (code prefix, title).
    pub families: &'static [(&'static str, &'static str)],
}

impl Registry {
    /// The title of the family `code` belongs to (`Other` when no prefix matches).
    #[must_use]
    pub fn family(&self, code: &str) -> &'static str {
        self.families.iter().find(|(p, _)| code.starts_with(p)).map_or("Other", |(_, t)| t)
    }
}

/// A stable code as `tpuport explain` and the generated docs read it. Implemented by every
/// registry's code type: [`crate::CodeInfo`] rows (audit, profile) and lint's `Rule` enum.
pub trait StableCode: Sized + 'static {
    /// The registry the code belongs to.
    fn registry() -> &'static Registry;
    /// Every code of the registry, in code order.
    fn all() -> &'static [Self];
    /// Stable code (`TPU101`).
    fn code(&self) -> &'static str;
    /// Kebab-case name (`dataloader-without-drop-last`).
    fn name(&self) -> String;
    /// The file that defines the rule, relative to the repository root.
    fn source(&self) -> &'static str;
    /// The rule's captured doc comment ([`crate::Documented::DOC`]).
    fn raw_doc(&self) -> &'static str;
    /// The facts its page shows after the family, in order (severity, status, …).
    fn facts(&self) -> Vec<Fact>;

    /// The code `code` (case-insensitive).
    #[must_use]
    fn lookup(code: &str) -> Option<&'static Self> {
        Self::all().iter().find(|c| c.code().eq_ignore_ascii_case(code))
    }

    /// The user documentation (Markdown), from the rule's doc comment.
    #[must_use]
    fn doc(&self) -> String {
        clean(self.raw_doc())
    }

    /// The first sentence under the registry's summary heading.
    #[must_use]
    fn summary(&self) -> String {
        summary(&self.doc(), Self::registry().summary_heading)
    }

    /// The title of the code's family.
    #[must_use]
    fn family_title(&self) -> &'static str {
        Self::registry().family(self.code())
    }

    /// The code's documentation page.
    #[must_use]
    fn page(&self) -> CodePage {
        let doc = self.doc();
        CodePage {
            code: self.code().to_owned(),
            name: self.name(),
            family: self.family_title(),
            facts: self.facts(),
            source: self.source(),
            summary: summary(&doc, Self::registry().summary_heading),
            doc,
        }
    }

    /// The registry's documentation: every code's page, in code order.
    #[must_use]
    fn docs() -> CodeDocs {
        CodeDocs { registry: Self::registry(), pages: Self::all().iter().map(Self::page).collect() }
    }
}

/// A registry's documentation: every code's page and the index page.
#[derive(Clone, Debug)]
pub struct CodeDocs {
    /// The registry.
    pub registry: &'static Registry,
    /// Every code, in code order.
    pub pages: Vec<CodePage>,
}

impl CodeDocs {
    /// The page of `code` (case-insensitive).
    #[must_use]
    pub fn lookup(&self, code: &str) -> Option<&CodePage> {
        self.pages.iter().find(|p| p.code.eq_ignore_ascii_case(code))
    }

    /// Every code with `name — summary`, for `tpuport explain --all`.
    #[must_use]
    pub fn list(&self) -> Vec<(String, String)> {
        self.pages.iter().map(|p| (p.code.clone(), format!("{} — {}", p.name, p.summary))).collect()
    }

    /// The index page: one table per family.
    #[must_use]
    pub fn index(&self) -> String {
        let reg = self.registry;
        let mut out = format!("# {}\n\n", reg.title);
        let _ = writeln!(
            out,
            "Generated from the rule sources by `{}`; do not edit by hand.",
            reg.regenerate
        );
        let _ = writeln!(out, "{}\n", reg.intro);
        let _ = writeln!(out, "{} {}.\n", self.pages.len(), reg.noun);
        for (prefix, title) in reg.families {
            let _ = writeln!(out, "## {title} (`{prefix}xx`)\n");
            let columns: Vec<&str> = self
                .pages
                .first()
                .map_or_else(Vec::new, |p| p.facts.iter().map(|f| f.column).collect());
            out.push_str("| Code | Name |");
            for c in &columns {
                let _ = write!(out, " {c} |");
            }
            out.push_str(" Summary |\n|---|---|");
            out.push_str(&"---|".repeat(columns.len()));
            out.push_str("---|\n");
            for p in self.pages.iter().filter(|p| p.code.starts_with(prefix)) {
                let _ = write!(out, "| [{code}]({code}.md) | {} |", p.name, code = p.code);
                for f in &p.facts {
                    let _ = write!(out, " {} |", f.short);
                }
                let _ = writeln!(out, " {} |", p.summary.replace('|', "\\|"));
            }
            out.push('\n');
        }
        out
    }

    /// Every generated file: (file name inside the docs folder, contents), index first.
    #[must_use]
    pub fn files(&self) -> Vec<(String, String)> {
        let mut files = vec![("README.md".to_owned(), self.index())];
        files.extend(self.pages.iter().map(|p| (format!("{}.md", p.code), p.render())));
        files
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn clean_strips_the_rustdoc_space_and_trims() {
        assert_eq!(
            clean(" ## What it does\n Finds x.\n\n  indented\n"),
            "## What it does\nFinds x.\n\n indented\n"
        );
        assert_eq!(clean(""), "\n");
    }

    #[test]
    fn summary_is_the_first_sentence_under_the_heading() {
        let doc = "## What it does\nChecks for `a`. More\ntext.\n\n## Why\nBecause.\n";
        assert_eq!(summary(doc, "## What it does"), "Checks for `a`.");
        assert_eq!(
            summary("## What it does\n\nOne line\nwrapped\n## Next\n", "## What it does"),
            "One line wrapped"
        );
        assert_eq!(summary(doc, "## What it finds"), "");
    }

    /// The registry of the kernel's tests.
    pub(crate) static TEST: Registry = Registry {
        name: "test",
        title: "test codes",
        docs_dir: "docs/test",
        regenerate: "make docs",
        intro: "Read them.",
        noun: "codes",
        summary_heading: "## What it finds",
        families: &[("X1", "Shapes"), ("X2", "Empty")],
    };

    fn docs() -> CodeDocs {
        let page = |code: &str, sev: Severity| CodePage {
            code: code.to_owned(),
            name: format!("name-{code}"),
            family: "Shapes",
            facts: vec![Fact::severity(sev)],
            source: "src/x.rs",
            doc: "## What it finds\nA | B. More.\n".to_owned(),
            summary: "A | B.".to_owned(),
        };
        CodeDocs {
            registry: &TEST,
            pages: vec![page("X101", Severity::Error), page("X102", Severity::Info)],
        }
    }

    #[test]
    fn page_and_index_layout() {
        let d = docs();
        assert_eq!(
            d.lookup("x101").map(CodePage::render).as_deref(),
            Some(
                "# name-X101 (X101)\n\nFamily: Shapes · Default severity: error\n\nDerived from `src/x.rs`.\n\n## What it finds\nA | B. More.\n"
            )
        );
        assert_eq!(
            d.index(),
            "# test codes\n\nGenerated from the rule sources by `make docs`; do not edit by hand.\nRead them.\n\n2 codes.\n\n\
             ## Shapes (`X1xx`)\n\n| Code | Name | Severity | Summary |\n|---|---|---|---|\n\
             | [X101](X101.md) | name-X101 | error | A \\| B. |\n| [X102](X102.md) | name-X102 | info | A \\| B. |\n\n\
             ## Empty (`X2xx`)\n\n| Code | Name | Severity | Summary |\n|---|---|---|---|\n\n"
        );
        let files = d.files();
        assert_eq!(
            files.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(),
            ["README.md", "X101.md", "X102.md"]
        );
        assert_eq!(d.list()[1], ("X102".to_owned(), "name-X102 — A | B.".to_owned()));
        assert!(d.lookup("X999").is_none());
    }
}
