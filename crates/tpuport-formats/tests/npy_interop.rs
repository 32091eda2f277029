//! `.npy` / `.npz` interop with NumPy from the project venv (fails when the venv is missing):
//! files written by `np.save`, `np.savez`, `np.savez_compressed` (ml_dtypes bfloat16, big
//! endian, Fortran order included) are read by tpuport; files tpuport writes are read by NumPy.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::Path;

use tpuport_formats::ImportOptions;
use tpuport_formats::npy::{read_npy, read_npz, write_npy, write_npz};
use tpuport_model::{DType, HostTensor};
fn run_py(code: &str, args: &[&Path]) -> String {
    String::from_utf8(tpuport_testkit::run_python(code, args).stdout).unwrap()
}

/// FNV-1a over bytes, the same function the Python side computes.
fn fnv(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b {
        h ^= u64::from(x);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

const PY_FNV: &str = r"
def fnv(b):
    h = 0xcbf29ce484222325
    for x in b:
        h ^= x
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h
";

const WRITE_NUMPY: &str = r"
import sys, json, numpy as np, ml_dtypes
out = sys.argv[1]
rng = np.random.default_rng(0)
arrs = {
  'f2': rng.standard_normal((3, 4)).astype('<f2'),
  'f4': rng.standard_normal((2, 3, 4)).astype('<f4'),
  'f8': rng.standard_normal((5,)).astype('<f8'),
  'i1': rng.integers(-100, 100, (7,)).astype('i1'),
  'i2': rng.integers(-1000, 1000, (2, 2)).astype('<i2'),
  'i4': rng.integers(-10**6, 10**6, (3,)).astype('<i4'),
  'i8': rng.integers(-10**12, 10**12, (2, 5)).astype('<i8'),
  'u1': rng.integers(0, 255, (4,)).astype('u1'),
  'u2': rng.integers(0, 60000, (4,)).astype('<u2'),
  'u4': rng.integers(0, 2**31, (4,)).astype('<u4'),
  'u8': rng.integers(0, 2**62, (4,)).astype('<u8'),
  'b1': rng.integers(0, 2, (3, 3)).astype(bool),
  'c8': (rng.standard_normal(3) + 1j * rng.standard_normal(3)).astype('<c8'),
  'c16': (rng.standard_normal(2) + 1j * rng.standard_normal(2)).astype('<c16'),
  'bf16': rng.standard_normal((4, 8)).astype(ml_dtypes.bfloat16),
  'f8e5m2': rng.standard_normal((6,)).astype(ml_dtypes.float8_e5m2),
  'scalar': np.float32(3.5).reshape(()),
  'empty': np.zeros((0, 3), '<f4'),
  'be_f4': rng.standard_normal((2, 3)).astype('>f4'),
  'be_i8': rng.integers(-10**9, 10**9, (3,)).astype('>i8'),
  'fortran': np.asfortranarray(rng.standard_normal((3, 4, 2)).astype('<f8')),
}
manifest = {}
for k, a in arrs.items():
    np.save(f'{out}/{k}.npy', a)
    c = np.ascontiguousarray(a)
    if c.dtype.byteorder == '>':
        c = c.astype(c.dtype.newbyteorder('<'))
    manifest[k] = [list(a.shape), fnv(c.tobytes())]
np.savez(f'{out}/plain.npz', **{k: arrs[k] for k in ['f4', 'i8', 'bf16', 'b1']})
np.savez_compressed(f'{out}/comp.npz', **{k: arrs[k] for k in ['f4', 'i8', 'bf16', 'fortran']})
print(json.dumps(manifest))
";

#[test]
fn reads_what_numpy_writes() {
    let d = tempfile::tempdir().unwrap();
    let code = format!("{PY_FNV}{WRITE_NUMPY}");
    let out = run_py(&code, &[d.path()]);
    let manifest: serde_json::Value = serde_json::from_str(&out).unwrap();
    let want_dtype = |k: &str| match k {
        "f2" => DType::F16,
        "f4" | "scalar" | "empty" | "be_f4" => DType::F32,
        "f8" | "fortran" => DType::F64,
        "i1" => DType::I8,
        "i2" => DType::I16,
        "i4" => DType::I32,
        "i8" | "be_i8" => DType::I64,
        "u1" => DType::U8,
        "u2" => DType::U16,
        "u4" => DType::U32,
        "u8" => DType::U64,
        "b1" => DType::Bool,
        "c8" => DType::C64,
        "c16" => DType::C128,
        "bf16" => DType::BF16,
        "f8e5m2" => DType::F8E5M2,
        other => panic!("{other}"),
    };
    let mut by_name = std::collections::HashMap::new();
    for (k, v) in manifest.as_object().unwrap() {
        let shape: Vec<u64> =
            v[0].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
        let h = v[1].as_u64().unwrap();
        let p = d.path().join(format!("{k}.npy"));
        let t = read_npy(&p).unwrap();
        assert_eq!(t.dtype, want_dtype(k), "{k}");
        assert_eq!(t.shape, shape, "{k}");
        assert_eq!(fnv(t.data()), h, "{k} bytes");
        // the importer agrees (mapped or converted)
        let m = tpuport_formats::open(&p, &ImportOptions::default()).unwrap();
        let w = m.weights.iter().next().unwrap();
        assert_eq!(fnv(&w.bytes().unwrap()), h, "{k} via importer");
        by_name.insert(k.clone(), h);
    }
    for (file, keys) in [
        ("plain.npz", vec!["f4", "i8", "bf16", "b1"]),
        ("comp.npz", vec!["f4", "i8", "bf16", "fortran"]),
    ] {
        let p = d.path().join(file);
        let arrays = read_npz(&p).unwrap();
        let names: Vec<&str> = arrays.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, keys, "{file}");
        for (n, t) in &arrays {
            assert_eq!(fnv(t.data()), by_name[n], "{file}:{n}");
        }
        let m = tpuport_formats::open(&p, &ImportOptions::default()).unwrap();
        for (n, _) in &arrays {
            assert_eq!(
                fnv(&m.weights.by_name(n).unwrap().bytes().unwrap()),
                by_name[n],
                "{file}:{n} via importer"
            );
        }
    }
}

const READ_BACK: &str = r"
import sys, json, numpy as np, ml_dtypes
d = sys.argv[1]
want = json.load(open(d + '/want.json'))
for k, (dtype, shape, h) in want.items():
    a = np.load(f'{d}/{k}.npy')
    if dtype == 'bfloat16':
        assert a.dtype == np.dtype('V2'), a.dtype
        a = a.view(ml_dtypes.bfloat16)
    else:
        assert a.dtype == np.dtype(getattr(ml_dtypes, dtype, None) or dtype), (k, a.dtype)
    assert list(a.shape) == shape, (k, a.shape)
    assert fnv(np.ascontiguousarray(a).tobytes()) == h, k
z = np.load(d + '/all.npz')
assert sorted(z.files) == sorted(want), z.files
for k, (dtype, shape, h) in want.items():
    assert list(z[k].shape) == shape
    assert fnv(z[k].tobytes()) == h, k
zc = np.load(d + '/allc.npz')
for k, (dtype, shape, h) in want.items():
    assert fnv(zc[k].tobytes()) == h, k
print('ok', len(want))
";

#[test]
fn numpy_reads_what_tpuport_writes() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        (DType::F32, "float32", vec![2, 3]),
        (DType::F64, "float64", vec![4]),
        (DType::F16, "float16", vec![3, 1]),
        (DType::BF16, "bfloat16", vec![2, 2]),
        (DType::F8E4M3FN, "float8_e4m3fn", vec![5]),
        (DType::F8E5M2, "float8_e5m2", vec![5]),
        (DType::I64, "int64", vec![3]),
        (DType::I32, "int32", vec![]),
        (DType::I16, "int16", vec![2]),
        (DType::I8, "int8", vec![2]),
        (DType::U64, "uint64", vec![2]),
        (DType::U32, "uint32", vec![2]),
        (DType::U16, "uint16", vec![2]),
        (DType::U8, "uint8", vec![0, 2]),
        (DType::Bool, "bool", vec![4]),
        (DType::C64, "complex64", vec![2]),
        (DType::C128, "complex128", vec![2]),
    ];
    let mut want = serde_json::Map::new();
    let mut all = Vec::new();
    for (dt, npname, shape) in cases {
        let n: u64 = shape.iter().product();
        let len = usize::try_from(dt.storage_bytes(n).unwrap()).unwrap();
        let data: Vec<u8> = (0..len)
            .map(|i| u8::try_from(i * 13 % 97).unwrap() & if dt == DType::Bool { 1 } else { 0x7f })
            .collect();
        let t = HostTensor::new(dt, shape.clone(), data).unwrap();
        let name = format!("t_{npname}");
        write_npy(&d.path().join(format!("{name}.npy")), &t).unwrap();
        want.insert(name.clone(), serde_json::json!([npname, shape, fnv(t.data())]));
        all.push((name, t));
    }
    write_npz(&d.path().join("all.npz"), &all, false).unwrap();
    write_npz(&d.path().join("allc.npz"), &all, true).unwrap();
    std::fs::write(d.path().join("want.json"), serde_json::Value::Object(want).to_string())
        .unwrap();
    let out = run_py(&format!("{PY_FNV}{READ_BACK}"), &[d.path()]);
    assert_eq!(out.trim(), "ok 17");
}
