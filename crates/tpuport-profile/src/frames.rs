//! Python source locations as the profilers print them, and which of them are the user's code.
//!
//! | producer | syntax |
//! |---|---|
//! | torch_xla `PT_XLA_DEBUG` | `  main (/path/train.py:48)` |
//! | JAX `explain_cache_misses` | `/path/train.py:27:12 (main)`, `defined at /path/train.py:13` |
//! | kineto `python_function` | name `train.py(23): __getitem__`, `args.CallFrom` `train.py:44` |
//! | TSL python tracer | name `$train.py:13 batches` (base name only) |

use std::fmt;

use serde::Serialize;

/// A place in Python source.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Frame {
    /// The file as the producer wrote it (absolute, relative to `sys.path`, or a base name).
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// The function, where the producer names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
}

impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)?;
        if let Some(func) = &self.function {
            write!(f, " ({func})")?;
        }
        Ok(())
    }
}

impl Frame {
    /// Whether this frame is in the user's code rather than a library or the standard library.
    #[must_use]
    pub fn is_user(&self) -> bool {
        is_user_file(&self.file)
    }
}

/// Top-level packages and standard-library modules whose frames are never the user's code
/// (kineto writes paths relative to the `sys.path` entry that holds them).
const LIBRARY_ROOTS: &[&str] = &[
    "torch",
    "torch_xla",
    "torchvision",
    "torchaudio",
    "functorch",
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "orbax",
    "chex",
    "equinox",
    "haiku",
    "numpy",
    "scipy",
    "pandas",
    "transformers",
    "tensorflow",
    "keras",
    "tf_keras",
    "absl",
    "google",
    "tqdm",
    "accelerate",
    "datasets",
    "lightning",
    "pytorch_lightning",
    "ml_dtypes",
    "PIL",
    "typing.py",
    "contextlib.py",
    "functools.py",
    "threading.py",
    "abc.py",
    "enum.py",
    "weakref.py",
    "queue.py",
    "selectors.py",
    "dataclasses.py",
    "warnings.py",
    "os.py",
    "random.py",
    "copy.py",
    "inspect.py",
    "traceback.py",
    "socket.py",
    "subprocess.py",
    "codecs.py",
    "logging",
    "multiprocessing",
    "concurrent",
    "collections",
    "importlib",
    "json",
    "asyncio",
    "re",
    "runpy.py",
    "threading",
    "_weakrefset.py",
    "tempfile.py",
    "shutil.py",
    "pickle.py",
];

/// Whether `file` (as a profiler wrote it) is the user's code.
#[must_use]
pub fn is_user_file(file: &str) -> bool {
    if file.is_empty() || file.starts_with('<') {
        return false;
    }
    let norm = file.replace('\\', "/");
    if ["/site-packages/", "/dist-packages/", "/lib/python3", "/lib64/python3", "/_pytest/"]
        .iter()
        .any(|p| norm.contains(p))
    {
        return false;
    }
    let parts: Vec<&str> = norm.split('/').filter(|p| !p.is_empty()).collect();
    if norm.starts_with('/') {
        // A framework checked out from source (`/workspaces/pytorch/xla/torch_xla/core/…`).
        return !parts[..parts.len().saturating_sub(1)].iter().any(|p| PACKAGE_DIRS.contains(p));
    }
    !parts.first().is_some_and(|first| LIBRARY_ROOTS.contains(first))
}

/// Package folders that mark a framework's own source inside an absolute path.
const PACKAGE_DIRS: &[&str] = &[
    "torch",
    "torch_xla",
    "torchvision",
    "torchaudio",
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "transformers",
    "tensorflow",
    "keras",
];

/// `main (/path/train.py:48)` (torch_xla): function, then the location in parentheses.
#[must_use]
pub fn parse_paren_frame(s: &str) -> Option<Frame> {
    let s = s.trim();
    let open = s.rfind(" (")?;
    let inner = s[open + 2..].strip_suffix(')')?;
    let (file, line) = split_file_line(inner)?;
    Some(Frame { file: file.to_owned(), line, function: Some(s[..open].trim().to_owned()) })
}

/// `/path/train.py:27:12 (main)` (JAX call site): location with an optional column, then the
/// function in parentheses.
#[must_use]
pub fn parse_callsite(s: &str) -> Option<Frame> {
    let s = s.trim();
    let (loc, func) = match s.rfind(" (") {
        Some(i) if s.ends_with(')') => (&s[..i], Some(s[i + 2..s.len() - 1].to_owned())),
        _ => (s, None),
    };
    // `file:line:col` or `file:line`.
    let (head, last) = split_file_line(loc)?;
    let (file, line) = split_file_line(head).unwrap_or((head, last));
    Some(Frame { file: file.to_owned(), line, function: func })
}

/// `file:line` → (`file`, line); `None` when the part after the last colon is not a number.
#[must_use]
pub fn split_file_line(s: &str) -> Option<(&str, u32)> {
    let (file, line) = s.rsplit_once(':')?;
    let line: u32 = line.trim().parse().ok()?;
    (!file.is_empty()).then_some((file, line))
}

/// kineto `python_function` name: `train.py(23): __getitem__`. Built-ins (`<built-in method
/// item of Tensor object at 0x…>`) give `None`.
#[must_use]
pub fn parse_kineto_function(name: &str) -> Option<Frame> {
    let (head, func) = name.split_once("): ")?;
    let open = head.rfind('(')?;
    let line: u32 = head[open + 1..].parse().ok()?;
    Some(Frame { file: head[..open].to_owned(), line, function: Some(func.to_owned()) })
}

/// TSL python-tracer name: `$train.py:13 batches`. Functions of C modules (`$time sleep`) have
/// no line and give `None`.
#[must_use]
pub fn parse_tsl_function(name: &str) -> Option<Frame> {
    let rest = name.strip_prefix('$')?;
    let (loc, func) = rest.split_once(' ')?;
    let (file, line) = split_file_line(loc)?;
    Some(Frame { file: file.to_owned(), line, function: Some(func.to_owned()) })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn syntaxes() {
        let f = parse_paren_frame("  train_loop_fn (/path/train.py:48)").unwrap();
        assert_eq!(
            (f.file.as_str(), f.line, f.function.as_deref()),
            ("/path/train.py", 48, Some("train_loop_fn"))
        );
        let f = parse_callsite("/w/jax_recompile.py:27:12 (main)").unwrap();
        assert_eq!(
            (f.file.as_str(), f.line, f.function.as_deref()),
            ("/w/jax_recompile.py", 27, Some("main"))
        );
        let f = parse_callsite("/w/jax_recompile.py:13").unwrap();
        assert_eq!((f.file.as_str(), f.line), ("/w/jax_recompile.py", 13));
        let f = parse_kineto_function("torch_loop.py(23): __getitem__").unwrap();
        assert_eq!((f.file.as_str(), f.line), ("torch_loop.py", 23));
        assert!(parse_kineto_function("<built-in method item of Tensor object at 0x7f>").is_none());
        let f = parse_tsl_function("$jax_loop.py:13 batches").unwrap();
        assert_eq!(
            (f.file.as_str(), f.line, f.function.as_deref()),
            ("jax_loop.py", 13, Some("batches"))
        );
        assert!(parse_tsl_function("$time sleep").is_none());
    }

    #[test]
    fn user_code() {
        assert!(is_user_file("torch_loop.py"));
        assert!(is_user_file("/work/x/train.py"));
        assert!(is_user_file("mypkg/data.py"));
        assert!(!is_user_file("torch/utils/data/dataloader.py"));
        assert!(!is_user_file("<frozen os>"));
        assert!(!is_user_file("/venv/lib/python3.11/site-packages/torch_xla/torch_xla.py"));
        assert!(!is_user_file("typing.py"));
        assert!(!is_user_file("/workspaces/pytorch/xla/torch_xla/core/xla_model.py"));
        assert!(is_user_file("/workspaces/pytorch/xla/examples/train_resnet_base.py"));
    }
}
