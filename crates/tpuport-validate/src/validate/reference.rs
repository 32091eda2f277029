//! The reference side: expected outputs read from files, onnxruntime run in a Python
//! subprocess (an optional dependency), and the rewritten modules saved for inspection.

use std::path::{Path, PathBuf};

use tpuport_exec::error::{Result, invalid, io};
use tpuport_formats::tensors::{Entry, Role, Slot};
use tpuport_model::HostTensor;

use super::Options;
use super::prepare::Prepared;

/// `--reference`.
pub(super) enum ReferenceKind {
    F32,
    Onnxruntime,
    Files(PathBuf),
}

impl ReferenceKind {
    pub(super) fn parse(s: &str, onnx: bool) -> Result<ReferenceKind> {
        Ok(match s {
            "f32" => ReferenceKind::F32,
            "onnxruntime" | "ort" => {
                if !onnx {
                    return Err(invalid("--reference onnxruntime needs an ONNX model"));
                }
                ReferenceKind::Onnxruntime
            }
            path => {
                let p = PathBuf::from(path);
                if !p.exists() {
                    return Err(invalid(format!(
                        "--reference {path}: no such file or directory (expected f32, \
                         onnxruntime, a directory or an .npz)"
                    )));
                }
                ReferenceKind::Files(p)
            }
        })
    }

    pub(super) fn word(&self) -> &'static str {
        match self {
            ReferenceKind::F32 => "f32",
            ReferenceKind::Onnxruntime => "onnxruntime",
            ReferenceKind::Files(_) => "files",
        }
    }
}

/// Writes the rewritten modules (`candidate.mlir`, `reference.mlir`) into `dir`.
pub(super) fn save_modules(dir: &Path, prep: &Prepared) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| io(format!("creating {}", dir.display()), e))?;
    for (name, text) in [("candidate.mlir", &prep.candidate), ("reference.mlir", &prep.reference)] {
        let path = dir.join(name);
        tpuport_model::fs::write_atomic_bytes(&path, text.as_bytes())
            .map_err(|e| io(format!("writing {}", path.display()), e))?;
    }
    Ok(())
}

/// Expected outputs from a tensor set, by `outN`, `output_N`, name, `N`, then order; extra
/// tensors follow (reported as outputs the model does not have).
pub(super) fn read_expected(path: &Path, outs: &[Slot]) -> Result<Vec<Option<HostTensor>>> {
    let named = tpuport_formats::tensors::read_set(path, Some("input_"), &Default::default())?;
    let entries = named.into_iter().map(|(n, t)| Entry::hint(n, t)).collect();
    let names: Vec<&str> = outs.iter().map(|s| s.name.as_str()).collect();
    let placed = tpuport_formats::tensors::assign(entries, &names, Role::Outputs)
        .map_err(|p| tpuport_formats::FormatError::bind(path.display().to_string(), p))?;
    let mut v: Vec<Option<HostTensor>> =
        placed.slots.into_iter().map(|e| e.map(|e| e.tensor)).collect();
    v.extend(placed.rest.into_iter().map(|e| Some(e.tensor)));
    Ok(v)
}

const ORT_SCRIPT: &str = r"
import sys, numpy as np, onnxruntime as ort
model, inp, out = sys.argv[1:4]
s = ort.InferenceSession(model, providers=['CPUExecutionProvider'])
z = np.load(inp)
names = [i.name for i in s.get_inputs()]
outs = []
for k in range(int(sys.argv[4])):
    feed = {nm: z[f's{k}_{nm}'] for nm in names if f's{k}_{nm}' in z.files}
    outs.append(s.run(None, feed))
np.savez(out, **{f'out{i}': (np.stack([o[i] for o in outs]) if len(outs) > 1 else outs[0][i]) for i in range(len(outs[0]))})
";

/// The model's outputs from onnxruntime on the same samples (stacked like the candidate's).
pub(super) fn onnxruntime(
    a: &Options,
    prep: &Prepared,
    samples: &[Vec<HostTensor>],
) -> Result<Vec<Option<HostTensor>>> {
    let dir = std::env::temp_dir().join(format!("tpuport-validate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| io(format!("creating {}", dir.display()), e))?;
    let result = onnxruntime_in(&dir, a, prep, samples);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn onnxruntime_in(
    dir: &Path,
    a: &Options,
    prep: &Prepared,
    samples: &[Vec<HostTensor>],
) -> Result<Vec<Option<HostTensor>>> {
    let inp = dir.join("inputs.npz");
    let out = dir.join("outputs.npz");
    let mut arrays = Vec::new();
    for (k, s) in samples.iter().enumerate() {
        for (sig, t) in prep.args.iter().zip(s) {
            arrays.push((format!("s{k}_{}", sig.name), t.clone()));
        }
    }
    tpuport_formats::npy::write_npz(&inp, &arrays, false)?;
    let python = a.python.clone().unwrap_or_else(|| PathBuf::from("python3"));
    let res = std::process::Command::new(&python)
        .arg("-c")
        .arg(ORT_SCRIPT)
        .arg(&a.model)
        .arg(&inp)
        .arg(&out)
        .arg(samples.len().to_string())
        .output()
        .map_err(|e| io(format!("--reference onnxruntime: running {}", python.display()), e))?;
    if !res.status.success() {
        let err = String::from_utf8_lossy(&res.stderr);
        let last = err.lines().last().unwrap_or("");
        return Err(invalid(format!(
            "--reference onnxruntime: {} failed: {last} (onnxruntime is an optional dependency: \
             `pip install onnxruntime numpy`, or pass --python)",
            python.display()
        )));
    }
    read_expected(&out, &prep.outputs)
}
