//! The JAX MLP fixture (buckets 1 and 128) as a model-repository entry of kind `stablehlo`,
//! for the serve tests of `tpuport-serve` and of the CLI.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use tpuport_formats::safetensors::{TensorOut, write_safetensors};

/// The MLP's weight names, in the modules' argument order (the data argument `x` comes last).
pub const WEIGHTS: [&str; 4] = ["w1", "b1", "w2", "b2"];

/// Writes `<root>/<name>`: `mlp_b1.mlir` and `mlp_b128.mlir` from `jax/mlp_b1` and
/// `jax/mlp_b128`, their weights in `weights.safetensors`, and a `config.toml` binding the
/// arguments, naming input `x` (FP32) and output `probs`, with buckets 1 and 128. `tail` is
/// appended after the `[batching]` table's `buckets` line: more `[batching]` keys, then any
/// further tables (`[executables]`). Returns the folder and the weights (w1 784x512, b1 512,
/// w2 512x10, b2 10) as f32 values.
#[must_use]
pub fn write(root: &Path, name: &str, tail: &str) -> (PathBuf, Vec<Vec<f32>>) {
    let fx = crate::fixtures("jax");
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for b in ["mlp_b1", "mlp_b128"] {
        let to = dir.join(format!("{b}.mlir"));
        std::fs::copy(fx.join(b).join("jit.mlir"), &to)
            .unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    }
    let mut tensors = Vec::new();
    let mut values = Vec::new();
    for (i, n) in WEIGHTS.iter().enumerate() {
        let p = fx.join(format!("mlp_b1/inputs/arg{i}.npy"));
        let t =
            tpuport_formats::npy::read_npy(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        values.push(
            t.data()
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        );
        tensors.push(TensorOut {
            name: (*n).to_owned(),
            dtype: t.dtype,
            shape: t.shape.clone(),
            data: Cow::Owned(t.data().to_vec()),
        });
    }
    let w = dir.join("weights.safetensors");
    write_safetensors(&w, &tensors, &[]).unwrap_or_else(|e| panic!("{}: {e}", w.display()));
    let config = format!(
        "[model]\nkind = \"stablehlo\"\npath = \"weights.safetensors\"\n\
         modules = {{ \"1\" = \"mlp_b1.mlir\", \"128\" = \"mlp_b128.mlir\" }}\n\
         args = [\"weight:w1\", \"weight:b1\", \"weight:w2\", \"weight:b2\", \"input:x\"]\n\
         [[input]]\nname = \"x\"\ndatatype = \"FP32\"\n[[output]]\nname = \"probs\"\n\
         [batching]\nbuckets = [1, 128]\n{tail}\n"
    );
    std::fs::write(dir.join("config.toml"), config)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    (dir, values)
}
