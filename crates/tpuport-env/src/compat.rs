//! Known-good framework version pairs, for `tpuport doctor`: given the installed distributions
//! (name, version, `Requires-Dist`), say which pairs do not go together, by which rule, from
//! which source, and what to install.
//!
//! | rule | source |
//! |---|---|
//! | a package's own `Requires-Dist` pins on the others (jax → jaxlib, `jax[tpu]` → libtpu, `jax[cuda12]` → jax-cuda12-plugin, torchvision → torch, `torch_xla[tpu]` → libtpu) | the package's metadata, read with `importlib.metadata.requires` |
//! | jaxlib must be at least jax's minimum and not newer than jax | jax `jax/_src/lib/__init__.py` `check_jaxlib_version`, which refuses the import |
//! | torch_xla must match torch's major.minor | pytorch/xla `README.md` release table (each torch_xla X.Y is built against torch X.Y; it declares no torch pin) |
//! | a StableHLO module must be within the PJRT plugin's `stablehlo_minimum_version` .. `stablehlo_current_version` | the plugin's attributes (`PJRT_Plugin_Attributes`); StableHLO promises backward, not forward, compatibility (openxla/stablehlo `docs/compatibility.md`) |
//!
//! A requirement under an extra (`extra == "tpu"`) is checked only when the package it names
//! is installed and the base requirements do not already constrain it.

use std::cmp::Ordering;
use std::fmt;

use serde::Serialize;

/// Distributions whose pairs are judged (normalised names).
pub const WATCHED: &[&str] = &[
    "jax",
    "jaxlib",
    "libtpu",
    "libtpu-nightly",
    "jax-cuda12-plugin",
    "jax-cuda12-pjrt",
    "jax-cuda13-plugin",
    "jax-cuda13-pjrt",
    "torch",
    "torch-xla",
    "torchvision",
    "tensorflow",
    "xla-cpu-pjrt",
];

/// One installed distribution.
#[derive(Debug, Clone)]
pub struct Installed {
    /// Distribution name as reported (`torch_xla`, `jax-cuda12-plugin`).
    pub name: String,
    /// Version string.
    pub version: String,
    /// Its `Requires-Dist` lines.
    pub requires: Vec<String>,
}

/// How bad a mismatch is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Likely to work but not promised (an extra's pin, forward compatibility).
    Warning,
    /// Refused at import or compile time.
    Error,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Warning => "warning",
            Level::Error => "error",
        })
    }
}

/// One judged pair.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// Severity.
    pub level: Level,
    /// What does not match, with the versions.
    pub message: String,
    /// The rule that was applied.
    pub rule: String,
    /// Where the rule comes from.
    pub source: &'static str,
    /// What to install.
    pub fix: String,
}

/// `Torch_XLA` → `torch-xla` (PEP 503).
#[must_use]
pub fn normalize(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace(['_', '.'], "-")
}

/// Judges the installed distributions; empty when every watched pair fits.
#[must_use]
pub fn judge(installed: &[Installed]) -> Vec<Verdict> {
    let find = |n: &str| installed.iter().find(|i| normalize(&i.name) == n);
    let mut out = Vec::new();
    for p in installed.iter().filter(|i| WATCHED.contains(&normalize(&i.name).as_str())) {
        let reqs: Vec<Requirement> =
            p.requires.iter().filter_map(|r| Requirement::parse(r)).collect();
        for r in &reqs {
            if !WATCHED.contains(&r.name.as_str()) || r.marker == Marker::Other {
                continue;
            }
            let base_constrains = reqs.iter().any(|b| b.marker == Marker::None && b.name == r.name);
            if matches!(r.marker, Marker::Extra(_)) && base_constrains {
                continue;
            }
            let Some(q) = find(&r.name) else {
                if r.marker == Marker::None {
                    out.push(Verdict {
                        level: Level::Error,
                        message: format!(
                            "{} {} needs {}, which is not installed",
                            p.name, p.version, r.name
                        ),
                        rule: format!(
                            "{} {} requires {}{}",
                            p.name,
                            p.version,
                            r.name,
                            r.spec_text()
                        ),
                        source: "the package's Requires-Dist metadata",
                        fix: format!("pip install '{}{}'", r.name, r.spec_text()),
                    });
                }
                continue;
            };
            let Some(v) = Version::parse(&q.version) else { continue };
            if r.specs.iter().all(|s| s.matches(&v)) {
                continue;
            }
            let (level, under) = match &r.marker {
                Marker::Extra(e) => (Level::Warning, format!(" (with `{}[{e}]`)", p.name)),
                _ => (Level::Error, String::new()),
            };
            out.push(Verdict {
                level,
                message: format!(
                    "{} {} does not satisfy {} {}'s requirement {}{}{under}",
                    q.name,
                    q.version,
                    p.name,
                    p.version,
                    r.name,
                    r.spec_text()
                ),
                rule: format!(
                    "{} {} requires {}{}{under}",
                    p.name,
                    p.version,
                    r.name,
                    r.spec_text()
                ),
                source: "the package's Requires-Dist metadata (importlib.metadata)",
                fix: format!(
                    "pip install '{}{}' (or the {} that matches {} {})",
                    r.name,
                    r.spec_text(),
                    p.name,
                    q.name,
                    q.version
                ),
            });
        }
    }
    jax_jaxlib(installed, &mut out);
    torch_xla(installed, &mut out);
    out.sort_by(|a, b| b.level.cmp(&a.level).then_with(|| a.message.cmp(&b.message)));
    out
}

/// jax's import-time check, for when jax's metadata is not available.
fn jax_jaxlib(installed: &[Installed], out: &mut Vec<Verdict>) {
    let find = |n: &str| installed.iter().find(|i| normalize(&i.name) == n);
    let (Some(jax), Some(lib)) = (find("jax"), find("jaxlib")) else { return };
    if !jax.requires.is_empty() {
        return;
    }
    let (Some(j), Some(l)) = (Version::parse(&jax.version), Version::parse(&lib.version)) else {
        return;
    };
    if l > j {
        out.push(Verdict {
            level: Level::Error,
            message: format!(
                "jaxlib {} is newer than jax {}: `import jax` refuses it",
                lib.version, jax.version
            ),
            rule: "jaxlib must not be newer than jax".to_owned(),
            source: "jax jax/_src/lib/__init__.py check_jaxlib_version",
            fix: format!("pip install 'jax=={}' (or 'jaxlib=={}')", lib.version, jax.version),
        });
    }
}

fn torch_xla(installed: &[Installed], out: &mut Vec<Verdict>) {
    let find = |n: &str| installed.iter().find(|i| normalize(&i.name) == n);
    let (Some(t), Some(x)) = (find("torch"), find("torch-xla")) else { return };
    let (Some(tv), Some(xv)) = (Version::parse(&t.version), Version::parse(&x.version)) else {
        return;
    };
    if tv.release.iter().take(2).ne(xv.release.iter().take(2)) {
        let mm = xv.release.iter().take(2).map(u64::to_string).collect::<Vec<_>>().join(".");
        out.push(Verdict {
            level: Level::Error,
            message: format!(
                "torch {} with torch_xla {}: torch_xla is built against torch {mm}",
                t.version, x.version
            ),
            rule: "torch_xla X.Y needs torch X.Y".to_owned(),
            source: "pytorch/xla README.md release table",
            fix: format!("pip install 'torch=={mm}.*' 'torch_xla=={}'", x.version),
        });
    }
}

/// A module's StableHLO version against a plugin's accepted range (`min`, `cur`).
#[must_use]
pub fn stablehlo(module: &str, min: [i64; 3], cur: [i64; 3]) -> Option<Verdict> {
    let parts: Vec<i64> = module.split('.').filter_map(|s| s.trim().parse().ok()).collect();
    let v: [i64; 3] = parts.try_into().ok()?;
    let show = |x: [i64; 3]| format!("{}.{}.{}", x[0], x[1], x[2]);
    let rule = format!("the plugin accepts StableHLO {} .. {}", show(min), show(cur));
    if v < min {
        return Some(Verdict {
            level: Level::Error,
            message: format!(
                "the module targets StableHLO {module}, older than the plugin's minimum {}",
                show(min)
            ),
            rule,
            source: "the plugin's stablehlo_minimum_version attribute (PJRT_Plugin_Attributes)",
            fix: "re-export the module with a newer jax / torch_xla".to_owned(),
        });
    }
    (v > cur).then(|| Verdict {
        level: Level::Warning,
        message: format!(
            "the module targets StableHLO {module}, newer than the plugin's {}: StableHLO promises backward, not forward, compatibility",
            show(cur)
        ),
        rule,
        source: "the plugin's stablehlo_current_version attribute; openxla/stablehlo docs/compatibility.md",
        fix: "install a newer plugin (libtpu / xla-cpu-pjrt), or export for an older target (jax.export's compatibility window)".to_owned(),
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Marker {
    None,
    Extra(String),
    Other,
}

/// One `Requires-Dist` line.
#[derive(Debug, Clone)]
struct Requirement {
    name: String,
    specs: Vec<Spec>,
    marker: Marker,
}

impl Requirement {
    /// `name[extras] (>=1,<2) ; marker` or `name>=1,<2; extra == "tpu"`.
    fn parse(line: &str) -> Option<Requirement> {
        let (req, marker) = match line.split_once(';') {
            Some((r, m)) => (r.trim(), Some(m.trim())),
            None => (line.trim(), None),
        };
        let end = req
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .unwrap_or(req.len());
        let name = normalize(&req[..end]);
        if name.is_empty() {
            return None;
        }
        let mut rest = req[end..].trim();
        if rest.starts_with('[') {
            rest = rest[rest.find(']')? + 1..].trim();
        }
        let rest = rest.trim_start_matches('(').trim_end_matches(')').trim();
        let specs = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split(',').map(Spec::parse).collect::<Option<Vec<_>>>()?
        };
        let marker = match marker {
            None => Marker::None,
            Some(m) => {
                let norm = m.replace('\'', "\"").replace(' ', "");
                match norm.strip_prefix("extra==\"").and_then(|s| s.strip_suffix('"')) {
                    Some(e) if !e.contains('"') => Marker::Extra(e.to_owned()),
                    _ => Marker::Other,
                }
            }
        };
        Some(Requirement { name, specs, marker })
    }

    fn spec_text(&self) -> String {
        self.specs.iter().map(|s| format!("{}{}", s.op, s.version)).collect::<Vec<_>>().join(",")
    }
}

/// One version specifier (`>=0.10.1`, `==0.0.42.*`, `~=2.1`).
#[derive(Debug, Clone)]
struct Spec {
    op: &'static str,
    version: String,
}

impl Spec {
    fn parse(s: &str) -> Option<Spec> {
        let s = s.trim();
        for op in ["===", "~=", "==", "!=", ">=", "<=", ">", "<"] {
            if let Some(v) = s.strip_prefix(op) {
                return Some(Spec { op, version: v.trim().to_owned() });
            }
        }
        None
    }

    fn matches(&self, v: &Version) -> bool {
        if self.op == "===" {
            return v.text == self.version;
        }
        if let Some(prefix) = self.version.strip_suffix(".*") {
            let Some(p) = Version::parse(prefix) else { return true };
            let hit =
                v.release.len() >= p.release.len() && v.release[..p.release.len()] == p.release[..];
            return if self.op == "!=" { !hit } else { hit };
        }
        let Some(w) = Version::parse(&self.version) else { return true };
        match self.op {
            "==" => v.cmp(&w) == Ordering::Equal,
            "!=" => v.cmp(&w) != Ordering::Equal,
            ">=" => v >= &w,
            "<=" => v <= &w,
            ">" => v > &w,
            "<" => v < &w,
            "~=" => {
                let keep = w.release.len().saturating_sub(1).max(1);
                v >= &w && v.release.len() >= keep && v.release[..keep] == w.release[..keep]
            }
            _ => true,
        }
    }
}

/// A PEP 440 version: release numbers, pre-release, post and dev parts (local part ignored).
#[derive(Debug, Clone)]
pub struct Version {
    text: String,
    release: Vec<u64>,
    /// (stage, n): dev-only 0, a 1, b 2, rc 3, final 4.
    pre: (u8, u64),
    post: Option<u64>,
    dev: Option<u64>,
}

impl Version {
    /// Parses `2.9.0+cu128`, `0.1.dev20240101`, `1.0rc2`, `2.0.post1`; `None` when there is no
    /// leading release number.
    #[must_use]
    pub fn parse(s: &str) -> Option<Version> {
        let text = s.trim().to_owned();
        let body = text
            .trim_start_matches(['v', 'V'])
            .split('+')
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        let rel_end = body.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(body.len());
        let release: Vec<u64> = body[..rel_end]
            .trim_end_matches('.')
            .split('.')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        let mut rest = body[rel_end..].trim_start_matches(['.', '-', '_']);
        let num = |r: &str| -> (u64, usize) {
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            (r[..end].parse().unwrap_or(0), end)
        };
        let mut pre = (4, 0);
        for (tag, stage) in [("alpha", 1), ("beta", 2), ("rc", 3), ("c", 3), ("a", 1), ("b", 2)] {
            if let Some(r) = rest.strip_prefix(tag) {
                let (n, used) = num(r);
                pre = (stage, n);
                rest = r[used..].trim_start_matches(['.', '-', '_']);
                break;
            }
        }
        let mut post = None;
        if let Some(r) = rest.strip_prefix("post") {
            let (n, used) = num(r);
            post = Some(n);
            rest = r[used..].trim_start_matches(['.', '-', '_']);
        }
        let mut dev = None;
        if let Some(r) = rest.strip_prefix("dev") {
            dev = Some(num(r).0);
            if pre.0 == 4 && post.is_none() {
                pre = (0, 0);
            }
        }
        Some(Version { text, release, pre, post, dev })
    }

    fn key(&self) -> (u8, u64, i128, i128) {
        let post = self.post.map_or(-1, i128::from);
        let dev = self.dev.map_or(i128::MAX, i128::from);
        (self.pre.0, self.pre.1, post, dev)
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Version {}
impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        let n = self.release.len().max(other.release.len());
        for i in 0..n {
            let (a, b) = (
                self.release.get(i).copied().unwrap_or(0),
                other.release.get(i).copied().unwrap_or(0),
            );
            match a.cmp(&b) {
                Ordering::Equal => {}
                o => return o,
            }
        }
        self.key().cmp(&other.key())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn pkg(name: &str, version: &str, requires: &[&str]) -> Installed {
        Installed {
            name: name.to_owned(),
            version: version.to_owned(),
            requires: requires.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    /// jax 0.10.2's own Requires-Dist lines (from its wheel's METADATA).
    const JAX_REQUIRES: &[&str] = &[
        "jaxlib<=0.10.2,>=0.10.1",
        "ml_dtypes>=0.5.0",
        "jaxlib==0.10.1; extra == \"minimum-jaxlib\"",
        "jaxlib<=0.10.2,>=0.10.2; extra == \"tpu\"",
        "libtpu==0.0.42.*; extra == \"tpu\"",
        "jax-cuda12-plugin[with-cuda]<=0.10.2,>=0.10.2; extra == \"cuda12\"",
    ];

    #[test]
    fn versions_order() {
        let v = |s| Version::parse(s).unwrap();
        assert!(v("0.10.2") > v("0.10.1"));
        assert!(v("2.9.0+cu128") == v("2.9"));
        assert!(v("1.0rc1") < v("1.0"));
        assert!(v("1.0.dev3") < v("1.0a1"));
        assert!(v("1.0.post1") > v("1.0"));
        assert!(Version::parse("nightly").is_none());
    }

    #[test]
    fn good_pairs_pass() {
        let env = [
            pkg("jax", "0.10.2", JAX_REQUIRES),
            pkg("jaxlib", "0.10.2", &[]),
            pkg("libtpu", "0.0.42.1", &[]),
        ];
        assert!(judge(&env).is_empty(), "{:?}", judge(&env));
        let env = [
            pkg("torch", "2.9.0+cu128", &[]),
            pkg("torch_xla", "2.9.0", &["libtpu==0.0.21; extra == \"tpu\""]),
        ];
        assert!(judge(&env).is_empty());
    }

    #[test]
    fn mismatches_are_named_with_rule_and_fix() {
        let env = [
            pkg("jax", "0.10.2", JAX_REQUIRES),
            pkg("jaxlib", "0.9.0", &[]),
            pkg("libtpu", "0.0.30", &[]),
        ];
        let v = judge(&env);
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(v[0].level, Level::Error);
        assert!(
            v[0].message.starts_with(
                "jaxlib 0.9.0 does not satisfy jax 0.10.2's requirement jaxlib<=0.10.2,>=0.10.1"
            ),
            "{}",
            v[0].message
        );
        assert!(v[0].fix.starts_with("pip install 'jaxlib<=0.10.2,>=0.10.1'"));
        assert_eq!(v[1].level, Level::Warning);
        assert!(
            v[1].message.contains("libtpu==0.0.42.*") && v[1].message.contains("jax[tpu]"),
            "{}",
            v[1].message
        );

        let v = judge(&[pkg("torch", "2.15.0", &[]), pkg("torch_xla", "2.9.0", &[])]);
        assert_eq!(v.len(), 1);
        assert!(v[0].fix.contains("torch==2.9.*"));
        let v = judge(&[pkg("jax", "0.4.30", &[]), pkg("jaxlib", "0.4.31", &[])]);
        assert_eq!(v[0].source, "jax jax/_src/lib/__init__.py check_jaxlib_version");
        let v = judge(&[
            pkg("torchvision", "0.29.2", &["numpy", "torch (>=2.14.0)"]),
            pkg("torch", "2.9.0", &[]),
        ]);
        assert_eq!(v.len(), 1);
    }

    #[test]
    fn stablehlo_range() {
        assert!(stablehlo("1.13.0", [0, 9, 0], [1, 13, 3]).is_none());
        assert_eq!(stablehlo("1.15.0", [0, 9, 0], [1, 13, 3]).unwrap().level, Level::Warning);
        assert_eq!(stablehlo("0.8.0", [0, 9, 0], [1, 13, 3]).unwrap().level, Level::Error);
    }
}
