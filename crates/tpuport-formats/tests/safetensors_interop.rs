//! safetensors written by the real writers (project venv; fails when it is missing):
//! `safetensors.torch.save_file` with every dtype it supports (bf16 and fp8 included) and
//! `huggingface_hub.save_torch_state_dict` shards with their index.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::Path;

use tpuport_formats::ImportOptions;
use tpuport_model::{DType, Framework, WeightData};
fn run_py(code: &str, dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&tpuport_testkit::run_python(code, &[dir]).stdout).unwrap()
}

const WRITE: &str = r"
import sys, os, json, torch, numpy as np
from safetensors.torch import save_file
import huggingface_hub
out = sys.argv[1]
torch.manual_seed(0)
def checksum(t):
    b = np.frombuffer(t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes(), np.uint8)
    w = (np.arange(b.size, dtype=np.uint64) % 251) + 1
    return int((b.astype(np.uint64) * w).sum(dtype=np.uint64))
def describe(sd):
    return {k: [str(t.dtype).removeprefix('torch.'), list(t.shape), checksum(t)] for k, t in sd.items()}
sd = {
  'f32': torch.randn(3, 4), 'bf16': torch.randn(5, 2).bfloat16(), 'f16': torch.randn(7).half(),
  'f64': torch.randn(2).double(), 'i64': torch.arange(5), 'i32': torch.arange(3, dtype=torch.int32),
  'i16': torch.tensor([-2, 3], dtype=torch.int16), 'i8': torch.tensor([-1], dtype=torch.int8),
  'u8': torch.tensor([200, 3], dtype=torch.uint8), 'bool': torch.tensor([True, False]),
  'f8e4m3': torch.randn(6).to(torch.float8_e4m3fn), 'f8e5m2': torch.randn(6).to(torch.float8_e5m2),
  'scalar': torch.tensor(2.5), 'empty': torch.zeros(0, 4),
}
save_file(sd, f'{out}/all.safetensors', metadata={'format': 'pt', 'who': 'test'})
big = {f'layer.{i}.weight': torch.randn(64, 64) for i in range(6)}
big['head.bias'] = torch.randn(10).bfloat16()
os.makedirs(f'{out}/sharded')
huggingface_hub.save_torch_state_dict(big, f'{out}/sharded', max_shard_size=40000)
shards = sorted(f for f in os.listdir(f'{out}/sharded') if f.endswith('.safetensors'))
print(json.dumps({'all': describe(sd), 'big': describe(big), 'shards': shards}))
";

#[test]
fn reads_files_from_safetensors_and_hf_hub() {
    let d = tempfile::tempdir().unwrap();
    let man = run_py(WRITE, d.path());
    let check = |m: &tpuport_model::Model, want: &serde_json::Value| {
        let want = want.as_object().unwrap();
        assert_eq!(m.weights.len(), want.len());
        for (name, v) in want {
            let w = m.weights.by_name(name).unwrap_or_else(|| panic!("{name} missing"));
            assert_eq!(Some(w.dtype), DType::from_name(v[0].as_str().unwrap()), "{name}");
            let shape: Vec<u64> =
                v[1].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
            assert_eq!(w.shape, shape, "{name}");
            assert!(matches!(w.data, WeightData::Mapped { .. }), "{name}");
            assert_eq!(
                tpuport_testkit::position_checksum(&w.bytes().unwrap()),
                v[2].as_u64().unwrap(),
                "{name}"
            );
        }
    };
    let m = tpuport_formats::open(&d.path().join("all.safetensors"), &ImportOptions::default())
        .unwrap();
    check(&m, &man["all"]);
    assert_eq!(m.metadata.producer.as_deref(), Some("pt"));
    assert_eq!(m.metadata.framework, Framework::PyTorch);
    assert!(m.metadata.properties.contains(&("who".to_owned(), "test".to_owned())));
    assert!(m.notes.is_empty(), "{:?}", m.notes);

    let shards = man["shards"].as_array().unwrap();
    assert!(shards.len() >= 3, "the writer split into {} shards", shards.len());
    let dir = d.path().join("sharded");
    let index = dir.join("model.safetensors.index.json");
    for p in [&index, &dir] {
        let m = tpuport_formats::open(p, &ImportOptions::default()).unwrap();
        check(&m, &man["big"]);
        assert!(m.notes.is_empty(), "{:?}", m.notes);
        assert!(
            m.metadata
                .properties
                .iter()
                .any(|(k, v)| k == "shards" && *v == shards.len().to_string())
        );
    }
}
