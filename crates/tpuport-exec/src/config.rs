//! The model repository format: each model's `config.toml` ([`ModelConfig`]), read by
//! `tpuport serve`, `tpuport batch` and `tpuport deploy`.
//!
//! A model repository is a folder with one sub-folder per model; each holds `config.toml`:
//!
//! ```toml
//! # repo/mlp/config.toml
//! version = "1"                   # optional; the only version served
//!
//! [model]
//! kind = "lowered"                # a `tpuport lower` output folder (manifest.json)
//! path = "lowered"                # relative to the model folder, never outside the repository
//! # kind = "stablehlo": one module per bucket, weights from a safetensors file
//! #   path = "weights.safetensors"
//! #   modules = { "1" = "mlp_b1.mlir", "8" = "mlp_b8.mlir" }
//! #   args = ["weight:w1", "weight:b1", "input:x"]    # what each module argument is
//! # kind = "onnx": path = "model.onnx", lowered at start once per bucket
//!
//! [[input]]                       # optional: rename or check the inputs
//! name = "x"
//! [[output]]
//! name = "probs"
//!
//! [batching]
//! buckets = [1, 8, 32]            # compiled sizes of the leading (batch) dimension
//! max_queue_delay_us = 500        # while a batch executes, wait this long for more requests
//! wait_when_idle = false          # true: wait even when nothing executes (Triton's rule)
//! max_queue_size = 256            # queued requests; more are refused with 503 + Retry-After
//! default_timeout_ms = 0          # 0: none; from when the request is read; `timeout` may lower it
//! instances = 2                   # executions in flight at once for this model
//! priority_levels = 2             # request parameter `priority`: 1 (highest) … levels
//! default_priority = 2
//!
//! [executables]                   # optional: executables saved by `tpuport compile --save`
//! files = { "1" = "exe/mlp_b1.pjrt", "32" = "exe/mlp_b32.pjrt" }   # bucket → file (+ FILE.json)
//! only = false                    # true: never compile; a missing or stale executable fails the model
//!
//! [image]                         # optional: how `tpuport batch` decodes image files; `tpuport
//! size = [224, 224]               #   serve` accepts the table and ignores it (requests carry
//! mean = [0.485, 0.456, 0.406]    #   tensors). Each `tpuport batch` flag (`--image-size`,
//! std = [0.229, 0.224, 0.225]     #   `--mean`, `--std`, `--layout`) overrides its field.
//! layout = "NCHW"                 # or "NHWC"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{ExecError, Result};

/// The file that makes a folder a model-repository entry.
pub const CONFIG_FILE: &str = "config.toml";

/// A model's `config.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Version string served (default `"1"`).
    #[serde(default = "one")]
    pub version: String,
    /// Where the program comes from.
    pub model: ModelSource,
    /// Inputs (optional renames and checks), in the program's input order.
    #[serde(default, rename = "input")]
    pub inputs: Vec<TensorConfig>,
    /// Outputs (optional renames), in the program's result order.
    #[serde(default, rename = "output")]
    pub outputs: Vec<TensorConfig>,
    /// Batching.
    #[serde(default)]
    pub batching: Batching,
    /// Executables saved by `tpuport compile --save`, loaded instead of compiling.
    #[serde(default)]
    pub executables: Option<Executables>,
    /// How `tpuport batch` decodes image files for this model; `tpuport serve` accepts the
    /// table and ignores it (requests carry tensors, not image files).
    #[serde(default)]
    pub image: Option<ImageConfig>,
}

impl ModelConfig {
    /// The config of a model with nothing but its source and buckets (every other field at its
    /// default): what a path that is not a repository entry runs with.
    #[must_use]
    pub fn of_source(model: ModelSource, buckets: Vec<u64>) -> ModelConfig {
        ModelConfig {
            version: one(),
            model,
            inputs: Vec::new(),
            outputs: Vec::new(),
            batching: Batching { buckets, ..Batching::default() },
            executables: None,
            image: None,
        }
    }
}

/// `[image]`: the decode spec of image rows for `tpuport batch` (each of its flags overrides
/// the field it names). Checked when the config is read; whether the size and layout fit the
/// model's input is checked by `tpuport batch`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(try_from = "RawImageConfig")]
pub struct ImageConfig {
    /// Height and width after resizing (`size = [H, W]`).
    pub size: Option<(u32, u32)>,
    /// Per-channel mean (R, G, B), subtracted after scaling pixels to `[0, 1]`.
    pub mean: Option<[f32; 3]>,
    /// Per-channel standard deviation (R, G, B), divided by after the mean.
    pub std: Option<[f32; 3]>,
    /// Channel order of a row.
    pub layout: Option<ImageLayout>,
}

/// `[image] layout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageLayout {
    /// `"NCHW"`: rows `[3, H, W]`.
    Nchw,
    /// `"NHWC"`: rows `[H, W, 3]`.
    Nhwc,
}

/// `[image]` as written; [`ImageConfig`] is what survives the checks.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawImageConfig {
    size: Option<Vec<u32>>,
    mean: Option<Vec<f32>>,
    std: Option<Vec<f32>>,
    layout: Option<String>,
}

impl TryFrom<RawImageConfig> for ImageConfig {
    type Error = String;

    fn try_from(r: RawImageConfig) -> Result<ImageConfig, String> {
        let size = match r.size.as_deref() {
            None => None,
            Some(&[h, w]) if h > 0 && w > 0 => Some((h, w)),
            Some(v) => {
                return Err(format!("image.size: {v:?} is not [H, W] with both at least 1"));
            }
        };
        let rgb = |field: &str, v: Option<Vec<f32>>| -> Result<Option<[f32; 3]>, String> {
            let Some(v) = v else { return Ok(None) };
            let a = <[f32; 3]>::try_from(v.as_slice())
                .map_err(|_| format!("image.{field}: {} value(s); give 3 (R, G, B)", v.len()))?;
            if a.iter().any(|x| !x.is_finite()) {
                return Err(format!("image.{field}: every value must be finite"));
            }
            Ok(Some(a))
        };
        let mean = rgb("mean", r.mean)?;
        let std = rgb("std", r.std)?;
        if std.is_some_and(|s| s.contains(&0.0)) {
            return Err("image.std: every value must be non-zero".to_owned());
        }
        let layout = match r.layout.as_deref() {
            None => None,
            Some(l) if l.eq_ignore_ascii_case("nchw") => Some(ImageLayout::Nchw),
            Some(l) if l.eq_ignore_ascii_case("nhwc") => Some(ImageLayout::Nhwc),
            Some(l) => return Err(format!("image.layout: {l:?} is not \"NCHW\" or \"NHWC\"")),
        };
        Ok(ImageConfig { size, mean, std, layout })
    }
}

/// Saved executables (`[executables]`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Executables {
    /// Bucket size (`"none"` for an unbatched model) → executable file; its manifest is the
    /// same path with `.json` appended. Buckets not listed are compiled.
    pub files: BTreeMap<String, String>,
    /// `true`: every bucket must have a saved executable that matches the running plugin and
    /// the program; anything else fails the model. `false` (default): a stale executable (made
    /// by another plugin build, for another platform or device kind, with other compile
    /// options, or from another program) is reported and its bucket compiled instead.
    #[serde(default)]
    pub only: bool,
}

fn one() -> String {
    "1".to_owned()
}

/// The program behind a model.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum ModelSource {
    /// A `tpuport lower` output folder: `manifest.json`, one module per bucket,
    /// `weights.safetensors`.
    Lowered {
        /// The folder, relative to the model folder.
        path: String,
    },
    /// One StableHLO module per bucket; weights from a safetensors file.
    Stablehlo {
        /// The weights file (optional when no argument is a weight).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// Bucket size → module file.
        modules: BTreeMap<String, String>,
        /// Each module argument: `input:NAME` or `weight:NAME` (default: every argument is an
        /// input named `input0`, `input1`, …).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        args: Vec<String>,
    },
    /// An ONNX model lowered at start, once per bucket.
    Onnx {
        /// The `.onnx` file.
        path: String,
    },
}

/// An input or output entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorConfig {
    /// Name clients use.
    pub name: String,
    /// Expected wire datatype (checked against the program at load).
    #[serde(default)]
    pub datatype: Option<String>,
}

/// Batching parameters (Triton's dynamic batcher and TF Serving's `allowed_batch_sizes`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Batching {
    /// Bucket sizes of the leading dimension, each compiled at start.
    #[serde(default)]
    pub buckets: Vec<u64>,
    /// How long the oldest queued request may wait for more rows, in microseconds, while an
    /// execution of the model is in flight (when none is, the batch runs at once).
    #[serde(default)]
    pub max_queue_delay_us: u64,
    /// Wait up to `max_queue_delay_us` even when no execution is in flight (Triton's and TF
    /// Serving's rule; default false: an idle model runs a request at once).
    #[serde(default)]
    pub wait_when_idle: bool,
    /// Queued requests at most (0: 1024).
    #[serde(default)]
    pub max_queue_size: usize,
    /// Default per-request timeout in milliseconds (0: none), counted from when the server
    /// reads the request; a request not started by then is answered 503 (timeout).
    #[serde(default)]
    pub default_timeout_ms: u64,
    /// Executions in flight at once (default 1).
    #[serde(default = "one_usize")]
    pub instances: usize,
    /// Priority levels (default 1).
    #[serde(default = "one_usize")]
    pub priority_levels: usize,
    /// Level of requests without a `priority` parameter (default: the lowest).
    #[serde(default)]
    pub default_priority: Option<usize>,
}

fn one_usize() -> usize {
    1
}

impl Default for Batching {
    fn default() -> Batching {
        Batching {
            buckets: Vec::new(),
            max_queue_delay_us: 0,
            wait_when_idle: false,
            max_queue_size: 0,
            default_timeout_ms: 0,
            instances: 1,
            priority_levels: 1,
            default_priority: None,
        }
    }
}

/// Largest values accepted for the batching knobs (a config is data, not a trusted program).
const MAX_BUCKET: u64 = 1 << 20;
const MAX_INSTANCES: usize = 64;
const MAX_LEVELS: usize = 16;

impl ModelConfig {
    /// Reads and checks `path`.
    ///
    /// # Errors
    /// [`ExecError::Config`] naming the file and the field.
    pub fn read(path: &Path) -> Result<ModelConfig> {
        let text = std::fs::read_to_string(path).map_err(|e| ExecError::file(path, e))?;
        let cfg: ModelConfig =
            toml::from_str(&text).map_err(|e| ExecError::config(path, one_line(&e.to_string())))?;
        cfg.check(path)?;
        Ok(cfg)
    }

    /// The config of `folder` and the file it was read from, when `folder` is a
    /// model-repository entry ([`is_entry`]); `None` for anything else.
    ///
    /// # Errors
    /// As [`ModelConfig::read`].
    pub fn of_entry(folder: &Path) -> Result<Option<(ModelConfig, PathBuf)>> {
        if !is_entry(folder) {
            return Ok(None);
        }
        let file = folder.join(CONFIG_FILE);
        Ok(Some((ModelConfig::read(&file)?, file)))
    }

    fn check(&self, path: &Path) -> Result<()> {
        let b = &self.batching;
        let mut prev = 0;
        for &s in &b.buckets {
            if s == 0 || s > MAX_BUCKET {
                return Err(ExecError::config(
                    path,
                    format!("batching.buckets: {s} is outside 1..={MAX_BUCKET}"),
                ));
            }
            if s <= prev {
                return Err(ExecError::config(
                    path,
                    "batching.buckets: sizes must be strictly increasing",
                ));
            }
            prev = s;
        }
        if b.instances == 0 || b.instances > MAX_INSTANCES {
            return Err(ExecError::config(
                path,
                format!("batching.instances: {} is outside 1..={MAX_INSTANCES}", b.instances),
            ));
        }
        if b.priority_levels == 0 || b.priority_levels > MAX_LEVELS {
            return Err(ExecError::config(
                path,
                format!(
                    "batching.priority_levels: {} is outside 1..={MAX_LEVELS}",
                    b.priority_levels
                ),
            ));
        }
        if let Some(d) = b.default_priority
            && (d == 0 || d > b.priority_levels)
        {
            return Err(ExecError::config(
                path,
                format!("batching.default_priority: {d} is outside 1..={}", b.priority_levels),
            ));
        }
        if b.max_queue_delay_us > 10_000_000 {
            return Err(ExecError::config(
                path,
                "batching.max_queue_delay_us: more than 10 s is not a batching delay",
            ));
        }
        if let Some(x) = &self.executables {
            for k in x.files.keys() {
                let ok = k == "none" || k.parse::<u64>().is_ok_and(|n| n > 0);
                if !ok {
                    return Err(ExecError::config(
                        path,
                        format!("executables.files: key {k:?} is not a bucket size (or \"none\")"),
                    ));
                }
            }
        }
        if let ModelSource::Stablehlo { modules, args, .. } = &self.model {
            if modules.is_empty() {
                return Err(ExecError::config(path, "model.modules: no module listed"));
            }
            for k in modules.keys() {
                let n: u64 = k.parse().map_err(|_| {
                    ExecError::config(
                        path,
                        format!("model.modules: key {k:?} is not a bucket size"),
                    )
                })?;
                if !b.buckets.is_empty() && !b.buckets.contains(&n) {
                    return Err(ExecError::config(
                        path,
                        format!("model.modules: bucket {n} is not in batching.buckets"),
                    ));
                }
            }
            if !b.buckets.is_empty() && b.buckets.len() != modules.len() {
                return Err(ExecError::config(
                    path,
                    "model.modules: need one module per bucket in batching.buckets",
                ));
            }
            for a in args {
                if !(a.starts_with("input:") || a.starts_with("weight:")) {
                    return Err(ExecError::config(
                        path,
                        format!("model.args: {a:?} must be `input:NAME` or `weight:NAME`"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Queue size with the default applied.
    #[must_use]
    pub fn queue_size(&self) -> usize {
        if self.batching.max_queue_size == 0 { 1024 } else { self.batching.max_queue_size }
    }
}

/// Whether `path` is a model-repository entry: a folder holding [`CONFIG_FILE`].
#[must_use]
pub fn is_entry(path: &Path) -> bool {
    path.is_dir() && path.join(CONFIG_FILE).is_file()
}

/// The first line of a (possibly multi-line) parser message.
fn one_line(s: &str) -> String {
    let mut lines = s.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or("invalid").trim().to_owned();
    // toml's messages put the explanation on the last line.
    match lines.next_back() {
        Some(l) if first.starts_with("TOML parse error") => format!("{first}: {}", l.trim()),
        _ => first,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(s: &str) -> Result<ModelConfig> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(&p, s).unwrap();
        ModelConfig::read(&p)
    }

    #[test]
    fn reads_a_full_config() {
        let c = parse(
            "[model]\nkind = \"lowered\"\npath = \"m\"\n[batching]\nbuckets = [1, 4]\n\
             max_queue_delay_us = 200\ninstances = 2\npriority_levels = 2\n",
        )
        .unwrap();
        assert_eq!(c.batching.buckets, vec![1, 4]);
        assert_eq!(c.version, "1");
        assert_eq!(c.queue_size(), 1024);
    }

    #[test]
    fn refuses_bad_values_with_the_field() {
        for (text, want) in [
            ("[model]\nkind=\"lowered\"\npath=\"m\"\n[batching]\nbuckets=[4,2]\n", "increasing"),
            ("[model]\nkind=\"lowered\"\npath=\"m\"\n[batching]\nbuckets=[0]\n", "buckets"),
            ("[model]\nkind=\"lowered\"\npath=\"m\"\n[batching]\ninstances=0\n", "instances"),
            ("[model]\nkind=\"zip\"\npath=\"m\"\n", "unknown variant"),
            ("[model]\nkind=\"lowered\"\npath=\"m\"\nextra=1\n", "unknown field"),
            ("[model]\nkind=\"stablehlo\"\nmodules={\"x\"=\"a.mlir\"}\n", "not a bucket size"),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn reads_and_checks_the_image_table() {
        let head = "[model]\nkind = \"lowered\"\npath = \"m\"\n[image]\n";
        let c = parse(&format!(
            "{head}size = [224, 192]\nmean = [0.485, 0.456, 0.406]\nstd = [0.229, 0.224, 1]\n\
             layout = \"NHWC\"\n"
        ))
        .unwrap();
        let want = ImageConfig {
            size: Some((224, 192)),
            mean: Some([0.485, 0.456, 0.406]),
            std: Some([0.229, 0.224, 1.0]),
            layout: Some(ImageLayout::Nhwc),
        };
        assert_eq!(c.image, Some(want));
        // Every field is optional; without the table there is no spec.
        assert_eq!(parse(&format!("{head}mean = [0, 0, 0]\n")).unwrap().image.unwrap().std, None);
        assert_eq!(parse("[model]\nkind = \"lowered\"\npath = \"m\"\n").unwrap().image, None);
        for (body, want) in [
            ("crop = 3\n", "unknown field `crop`"),
            ("mean = [0.5, 0.5]\n", "image.mean: 2 value(s); give 3"),
            ("std = [1, 0, 1]\n", "image.std: every value must be non-zero"),
            ("std = [1, nan, 1]\n", "image.std: every value must be finite"),
            ("size = [224]\n", "image.size"),
            ("size = [0, 224]\n", "image.size"),
            ("layout = \"NCWH\"\n", "image.layout: \"NCWH\""),
            ("mean = \"imagenet\"\n", "expected a sequence"),
        ] {
            let e = parse(&format!("{head}{body}")).unwrap_err().to_string();
            assert!(e.contains(want), "{body:?}: {e}");
            assert!(e.contains("config.toml"), "names the file: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }
}
