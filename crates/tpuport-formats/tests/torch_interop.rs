//! Checkpoints written by the real `torch.save` (project venv; fails when it is missing): a
//! torchvision model's state dict, a training checkpoint with optimizer state and unusual
//! tensors, a `{'state_dict': ...}` wrapper and a legacy (non-zip) file. Names, dtypes, shapes,
//! element totals and a checksum of every tensor's bytes must match what torch reports, and the
//! scan must find only allow-listed globals.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::Path;

use tpuport_formats::torch;
use tpuport_formats::{ImportOptions, Limits};
use tpuport_model::{DType, ModelFormat};
fn run_py(code: &str, dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&tpuport_testkit::run_python(code, &[dir]).stdout).unwrap()
}

const WRITE: &str = r"
import sys, json, collections, torch, torchvision, numpy as np
out = sys.argv[1]
torch.manual_seed(0)

def checksum(t):
    b = np.frombuffer(t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes(), np.uint8)
    w = (np.arange(b.size, dtype=np.uint64) % 251) + 1
    return int((b.astype(np.uint64) * w).sum(dtype=np.uint64))

def flat(o, prefix, acc):
    if isinstance(o, torch.Tensor):
        acc.append((prefix, o))
    elif isinstance(o, dict):
        for k, v in o.items():
            flat(v, f'{prefix}.{k}' if prefix else str(k), acc)
    elif isinstance(o, (list, tuple)):
        for i, v in enumerate(o):
            flat(v, f'{prefix}.{i}' if prefix else str(i), acc)

def describe(obj):
    acc = []
    flat(obj, '', acc)
    return [[n, str(t.dtype).removeprefix('torch.'), list(t.shape), t.numel(), checksum(t)] for n, t in acc]

man = {}
tv = torchvision.models.resnet18(weights=None).state_dict()
torch.save(tv, f'{out}/resnet18.pt')
man['resnet18.pt'] = describe(tv)

net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
net(torch.randn(8, 3)).sum().backward()
opt.step()
base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
extra = {
    'param_bf16': torch.nn.Parameter(torch.randn(3, 3).bfloat16()),
    'f16': torch.randn(5).half(),
    'f64': torch.randn(2, 2).double(),
    'i32': torch.arange(6, dtype=torch.int32).reshape(2, 3),
    'i8': torch.tensor([-3, 4], dtype=torch.int8),
    'u8': torch.tensor([250, 1], dtype=torch.uint8),
    'bool': torch.tensor([True, False, True]),
    'f8': torch.randn(4).to(torch.float8_e4m3fn),
    'f8b': torch.randn(4).to(torch.float8_e5m2),
    'u16': torch.tensor([1, 2, 60000], dtype=torch.int32).to(torch.uint16),
    'c64': torch.randn(2, dtype=torch.complex64),
    'scalar': torch.tensor(3.5),
    'empty': torch.zeros(0, 3),
    'view_t': base.t(),
    'view_slice': base[1:3, 2:5],
    'view_offset': base[2],
    'tied': net[0].weight,
    'list': [torch.ones(2), (torch.zeros(1, dtype=torch.int64),)],
}
ck = {'model': net.state_dict(), 'optimizer': opt.state_dict(), 'epoch': 3, 'extra': extra,
      'device': torch.device('cpu'), 'dtype': torch.float16, 'ids': {1, 2}, 'blob': b'xy'}
torch.save(ck, f'{out}/checkpoint.pth')
man['checkpoint.pth'] = describe(ck)

wrapped = {'state_dict': net.state_dict(), 'meta': {'name': 'n'}}
torch.save(wrapped, f'{out}/wrapped.ckpt')
man['wrapped.ckpt'] = describe(wrapped)

legacy = {'model': net.state_dict(), 'bf16': torch.randn(2, 3).bfloat16(), 'view': base[:, 1:3], 'tied': net[0].weight}
torch.save(legacy, f'{out}/legacy.pt', _use_new_zipfile_serialization=False)
man['legacy.pt'] = describe(legacy)
print(json.dumps(man))
";

#[test]
fn reads_real_torch_save_checkpoints() {
    let d = tempfile::tempdir().unwrap();
    let manifest = run_py(WRITE, d.path());
    for (file, tensors) in manifest.as_object().unwrap() {
        let p = d.path().join(file);
        let m = tpuport_formats::open(&p, &ImportOptions::default())
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let want_format =
            if file == "legacy.pt" { ModelFormat::TorchLegacy } else { ModelFormat::TorchZip };
        assert_eq!(m.format, want_format, "{file}");
        let tensors = tensors.as_array().unwrap();
        let got: Vec<_> = m.weights.iter().collect();
        let names: Vec<&str> = got.iter().map(|w| w.name.as_str()).collect();
        let want_names: Vec<&str> = tensors.iter().map(|t| t[0].as_str().unwrap()).collect();
        assert_eq!(names, want_names, "{file}");
        let mut total = 0u64;
        for (w, t) in got.iter().zip(tensors) {
            let name = t[0].as_str().unwrap();
            assert_eq!(Some(w.dtype), DType::from_name(t[1].as_str().unwrap()), "{file}:{name}");
            let shape: Vec<u64> =
                t[2].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
            assert_eq!(w.shape, shape, "{file}:{name}");
            assert_eq!(w.elements(), t[3].as_u64().unwrap(), "{file}:{name}");
            let bytes = w.bytes().unwrap_or_else(|e| panic!("{file}:{name}: {e}"));
            assert_eq!(
                tpuport_testkit::position_checksum(&bytes),
                t[4].as_u64().unwrap(),
                "{file}:{name} bytes"
            );
            total += t[3].as_u64().unwrap();
        }
        assert_eq!(m.weights.total_elements(), total, "{file}");

        let rep = torch::scan(&p).unwrap();
        assert!(rep.is_clean(), "{file}: {:?} {:?}", rep.notes, rep.flagged().collect::<Vec<_>>());
        assert!(!rep.globals.is_empty());
    }
    // the torchvision model really is a full state dict (a real-size checkpoint, not a toy)
    let m = torch::import_with(&d.path().join("resnet18.pt"), &Limits::default()).unwrap();
    assert!(m.weights.total_elements() > 11_000_000);
}

const EVIL: &str = r"
import sys, json, os, torch
out = sys.argv[1]
class Evil:
    def __reduce__(self):
        return (os.system, ('echo pwned > ' + out + '/pwned',))
torch.save({'w': torch.ones(2), 'x': Evil()}, out + '/evil.pt')
torch.save(torch.nn.Sequential(torch.nn.Linear(2, 2)), out + '/module.pt')
print(json.dumps({}))
";

#[test]
fn refuses_a_real_malicious_torch_save() {
    let d = tempfile::tempdir().unwrap();
    run_py(EVIL, d.path());
    let p = d.path().join("evil.pt");
    let e = tpuport_formats::open(&p, &ImportOptions::default()).unwrap_err().to_string();
    // CPython pickles os.system as posix.system on Linux.
    assert!(e.contains("pickle global posix.system is outside the tensor allow-list"), "{e}");
    assert!(!d.path().join("pwned").exists());
    let rep = torch::scan(&p).unwrap();
    assert!(rep.flagged().any(|g| g.qualified() == "posix.system"));
    // a whole pickled module names its classes: refused, with a hint
    let p = d.path().join("module.pt");
    let e = tpuport_formats::open(&p, &ImportOptions::default()).unwrap_err().to_string();
    assert!(e.contains("torch.nn.modules.container.Sequential"), "{e}");
    assert!(e.contains("save model.state_dict() instead"), "{e}");
}
