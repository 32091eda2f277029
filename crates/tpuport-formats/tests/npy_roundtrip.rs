//! `.npy` / `.npz` write → read round trips for every dtype, hostile and truncated files,
//! big-endian and Fortran-order reads, atomic writes, and the importer.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::Path;

use tpuport_formats::npy::{
    self, NpyImporter, read_npy, read_npz, read_npz_with, write_npy, write_npz,
};
use tpuport_formats::{FormatError, ImportOptions, Importer, Limits};
use tpuport_model::{DType, HostTensor, ModelFormat, WeightData};

fn sample(dtype: DType, shape: Vec<u64>) -> HostTensor {
    let n: u64 = shape.iter().product();
    let bytes = dtype.storage_bytes(n).unwrap();
    let data: Vec<u8> = (0..bytes).map(|i| u8::try_from((i * 37 + 11) % 251).unwrap()).collect();
    let data = if dtype == DType::Bool { data.iter().map(|b| b & 1).collect() } else { data };
    HostTensor::new(dtype, shape, data).unwrap()
}

/// Every dtype npy can hold: all but the packed 4-bit types and strings.
fn npy_dtypes() -> impl Iterator<Item = DType> {
    DType::ALL.into_iter().filter(|d| !matches!(d, DType::I4 | DType::U4 | DType::String))
}

#[test]
fn npy_round_trip_every_dtype() {
    let d = tempfile::tempdir().unwrap();
    for dt in npy_dtypes() {
        for shape in [vec![], vec![5], vec![2, 3, 4], vec![0, 3]] {
            let t = sample(dt, shape.clone());
            let p = d.path().join(format!("{dt}.npy"));
            write_npy(&p, &t).unwrap();
            let back = read_npy(&p).unwrap();
            assert_eq!(back, t, "{dt} {shape:?}");
            let bytes = std::fs::read(&p).unwrap();
            let hlen = bytes.len() - t.data().len();
            assert_eq!(hlen % 64, 0, "data is 64-byte aligned");
        }
    }
    for dt in DType::ALL {
        if !npy_dtypes().any(|n| n == dt) {
            let t = HostTensor::new(
                dt,
                vec![2],
                vec![0; usize::try_from(dt.storage_bytes(2).unwrap_or(0)).unwrap()],
            );
            if let Ok(t) = t {
                let e = write_npy(&d.path().join("x.npy"), &t).unwrap_err();
                assert!(matches!(e, FormatError::Unsupported { .. }), "{dt}: {e}");
            }
        }
    }
}

#[test]
fn npz_round_trip_stored_and_deflated() {
    let d = tempfile::tempdir().unwrap();
    let arrays: Vec<(String, HostTensor)> =
        npy_dtypes().map(|dt| (format!("a_{dt}"), sample(dt, vec![3, 2]))).collect();
    for compress in [false, true] {
        let p = d.path().join(format!("t{compress}.npz"));
        write_npz(&p, &arrays, compress).unwrap();
        assert_eq!(read_npz(&p).unwrap(), arrays);
        let m = tpuport_formats::open(&p, &ImportOptions::default()).unwrap();
        assert_eq!(m.format, ModelFormat::Npz);
        assert_eq!(m.weights.len(), arrays.len());
        for (name, t) in &arrays {
            let w = m.weights.by_name(name).unwrap();
            assert_eq!(w.dtype, t.dtype);
            assert_eq!(&*w.bytes().unwrap(), t.data());
            assert_eq!(matches!(w.data, WeightData::Mapped { .. }), !compress, "{name}");
        }
    }
    let dup = vec![arrays[0].clone(), arrays[0].clone()];
    assert!(write_npz(&d.path().join("dup.npz"), &dup, false).is_err());
}

#[test]
fn npz_limits_stop_bombs() {
    let d = tempfile::tempdir().unwrap();
    let big = HostTensor::new(DType::U8, vec![100_000], vec![0; 100_000]).unwrap();
    let p = d.path().join("big.npz");
    write_npz(&p, &[("x".to_owned(), big)], true).unwrap();
    let lim = Limits { max_inflated_bytes: 10_000, ..Limits::default() };
    let e = read_npz_with(&p, &lim).unwrap_err().to_string();
    assert!(e.contains("over the remaining inflation limit of 10000 bytes"), "{e}");
    let opts = ImportOptions { limits: lim, ..ImportOptions::default() };
    assert!(tpuport_formats::open(&p, &opts).is_err());
}

fn npy_file(dir: &Path, name: &str, header: &str, data: &[u8]) -> std::path::PathBuf {
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend_from_slice(&u16::try_from(header.len()).unwrap().to_le_bytes());
    b.extend_from_slice(header.as_bytes());
    b.extend_from_slice(data);
    let p = dir.join(name);
    std::fs::write(&p, b).unwrap();
    p
}

#[test]
fn big_endian_and_fortran_are_converted() {
    let d = tempfile::tempdir().unwrap();
    let be: Vec<u8> = [1.5f32, -2.0, 3.25].iter().flat_map(|v| v.to_be_bytes()).collect();
    let p = npy_file(
        d.path(),
        "be.npy",
        "{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }\n",
        &be,
    );
    let t = read_npy(&p).unwrap();
    assert_eq!(t.to_f64().unwrap(), vec![1.5, -2.0, 3.25]);
    let m = tpuport_formats::open(&p, &ImportOptions::default()).unwrap();
    assert_eq!(m.weights.by_name("be").unwrap().bytes().unwrap().as_ref(), t.data());
    // complex big-endian swaps each part
    let c: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_be_bytes()).collect();
    let p = npy_file(
        d.path(),
        "c.npy",
        "{'descr': '>c8', 'fortran_order': False, 'shape': (1,), }\n",
        &c,
    );
    let want: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(read_npy(&p).unwrap().data(), &want[..]);
    // Fortran order [[0,1,2],[3,4,5]] is stored column-major 0 3 1 4 2 5
    let f: Vec<u8> = [0i16, 3, 1, 4, 2, 5].iter().flat_map(|v| v.to_le_bytes()).collect();
    let p = npy_file(
        d.path(),
        "f.npy",
        "{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3), }\n",
        &f,
    );
    let t = read_npy(&p).unwrap();
    assert_eq!(t.to_f64().unwrap(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
}

#[test]
fn hostile_and_truncated_npy() {
    let d = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[u8], &str)] = &[
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n",
            &[0; 20],
            "data is 20 bytes but dtype f32 and shape [2, 3] need 24 (truncated)",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n",
            &[0; 12],
            "data is 12 bytes",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }\n",
            &[],
            "overflows",
        ),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }\n", &[], "negative dimension"),
        (
            "{'descr': '<U4', 'fortran_order': False, 'shape': (1,), }\n",
            &[0; 16],
            "unsupported descr '<U4'",
        ),
        (
            "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }\n",
            &[0; 8],
            "unsupported descr",
        ),
        ("{'descr': '<V1', 'fortran_order': False, 'shape': (1,), }\n", &[0; 1], "ambiguous"),
        (
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }\n",
            &[0; 4],
            "structured",
        ),
        ("{'descr': '<f4', 'shape': (1,) 'x': 1}\n", &[0; 4], "missing ','"),
        ("not a dict at all\n", &[], "unexpected text"),
    ];
    for (h, data, want) in cases {
        let p = npy_file(d.path(), "bad.npy", h, data);
        let e = read_npy(&p).unwrap_err().to_string();
        assert!(e.contains(want), "{h}: {e}");
        assert!(e.contains("bad.npy"), "{e}");
        assert!(tpuport_formats::open(&p, &ImportOptions::default()).is_err());
    }
    // header length past EOF
    let p = d.path().join("eof.npy");
    std::fs::write(&p, b"\x93NUMPY\x01\x00\xff\x7f{'descr'").unwrap();
    assert!(
        read_npy(&p).unwrap_err().to_string().contains("header length 32767 exceeds file size")
    );
    std::fs::write(&p, b"\x93NUM").unwrap();
    assert!(read_npy(&p).is_err());
}

#[test]
fn writes_are_atomic() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("keep.npy");
    let good = sample(DType::F32, vec![4]);
    write_npy(&p, &good).unwrap();
    let before = std::fs::read(&p).unwrap();
    // an unsupported dtype fails before touching the file
    let bad = HostTensor::new(DType::I4, vec![2], vec![0]).unwrap();
    assert!(write_npy(&p, &bad).is_err());
    assert_eq!(std::fs::read(&p).unwrap(), before);
    // a missing folder fails cleanly
    assert!(matches!(
        write_npy(&d.path().join("no/such/dir/x.npy"), &good),
        Err(FormatError::Io { .. })
    ));
    // no temporary files left behind
    let names: Vec<_> =
        std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn importer_maps_npy_and_sniffs() {
    let d = tempfile::tempdir().unwrap();
    let t = sample(DType::BF16, vec![4, 4]);
    let p = d.path().join("arg0.npy");
    write_npy(&p, &t).unwrap();
    let m = tpuport_formats::open(&p, &ImportOptions::default()).unwrap();
    assert_eq!(m.format, ModelFormat::Npy);
    let w = m.weights.by_name("arg0").unwrap();
    assert_eq!((w.dtype, w.shape.clone()), (DType::BF16, vec![4, 4]));
    assert!(matches!(w.data, WeightData::Mapped { .. }));
    assert_eq!(&*w.bytes().unwrap(), t.data());
    let head = std::fs::read(&p).unwrap();
    assert!(NpyImporter.sniff(Path::new("whatever"), &head[..64]));
    assert!(!NpyImporter.sniff(Path::new("x.pt"), b"PK\x03\x04"));
    let _ = npy::read_npz;
}
