//! `inspect` on safetensors checkpoints written from real Keras and Flax models (issue 13,
//! item 5): BatchNorm state (`moving_mean`/`moving_variance`, Flax's `batch_stats`) is counted
//! apart from the parameters, per framework convention, with the framework's own figures in the
//! explanation. The models are built here by Keras (JAX backend) and Flax; the expected counts
//! are the frameworks' own (`count_params()`, `trainable_weights`, the size of the `params`
//! pytree), written next to the checkpoints by the same script.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;

const SCRIPT: &str = r#"
import json, os, sys
os.environ["KERAS_BACKEND"] = "jax"
import numpy as np
from safetensors.numpy import save_file
out = sys.argv[1]
counts = {}

import keras
m = keras.applications.MobileNetV2(weights=None, input_shape=(96, 96, 3), alpha=0.35)
save_file({w.path: np.asarray(w.numpy()) for w in m.weights}, os.path.join(out, "keras.safetensors"))
counts["keras_total"] = int(m.count_params())
counts["keras_trainable"] = int(sum(np.prod(w.shape) for w in m.trainable_weights))
counts["keras_non_trainable"] = int(sum(np.prod(w.shape) for w in m.non_trainable_weights))

import jax, jax.numpy as jnp
import flax.linen as nn
from flax.traverse_util import flatten_dict

class Net(nn.Module):
    @nn.compact
    def __call__(self, x, train=False):
        for i, c in enumerate([16, 32]):
            x = nn.Conv(c, (3, 3))(x)
            x = nn.BatchNorm(use_running_average=not train)(x)
            x = nn.relu(x)
        return nn.Dense(10)(x.mean(axis=(1, 2)))

v = Net().init(jax.random.PRNGKey(0), jnp.zeros((1, 32, 32, 3)))
flat = flatten_dict(jax.device_get(v), sep=".")
save_file({k: np.asarray(a) for k, a in flat.items()}, os.path.join(out, "flax.safetensors"))
counts["flax_params"] = int(sum(a.size for a in jax.tree_util.tree_leaves(v["params"])))
counts["flax_batch_stats"] = int(sum(a.size for a in jax.tree_util.tree_leaves(v["batch_stats"])))
json.dump(counts, open(os.path.join(out, "counts.json"), "w"))
"#;

fn inspect(path: &Path) -> serde_json::Value {
    common::inspect_json(path, &[])
}

#[test]
fn keras_and_flax_batchnorm_state_is_counted_apart() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("make.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let o =
        std::process::Command::new(common::python()).arg(&script).arg(dir.path()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let counts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("counts.json")).unwrap())
            .unwrap();
    let n = |k: &str| counts[k].as_u64().unwrap();

    let k = inspect(&dir.path().join("keras.safetensors"));
    let p = &k["params"];
    assert_eq!(p["elements"].as_u64().unwrap(), n("keras_trainable"), "{p:#}");
    assert_eq!(
        p["buffers_by_convention"]["keras"]["elements"].as_u64().unwrap(),
        n("keras_non_trainable")
    );
    assert!(p["buffers_by_convention"].get("torch").is_none(), "{p:#}");
    let why = k["explanations"].as_array().unwrap();
    let keras = why.iter().find(|e| e["code"] == "keras-bn-state").expect("keras explanation");
    // the explanation gives Keras' own count_params() figure
    let total = n("keras_total").to_string();
    assert!(keras["message"].as_str().unwrap().contains(&total), "{keras:#} vs {total}");

    let f = inspect(&dir.path().join("flax.safetensors"));
    let p = &f["params"];
    assert_eq!(p["elements"].as_u64().unwrap(), n("flax_params"), "{p:#}");
    assert_eq!(
        p["buffers_by_convention"]["flax"]["elements"].as_u64().unwrap(),
        n("flax_batch_stats")
    );
    let why = f["explanations"].as_array().unwrap();
    assert!(why.iter().any(|e| e["code"] == "flax-batch-stats"), "{why:#?}");
}
