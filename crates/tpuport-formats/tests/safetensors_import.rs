//! safetensors import on hand-written files: valid files, every dtype, hostile headers, shards.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::{Path, PathBuf};

use tpuport_formats::{FormatError, ImportOptions, Importer, Limits, safetensors};
use tpuport_model::{DType, Framework, ModelFormat, NoteLevel, WeightData};

fn st_bytes(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn import(p: &Path) -> Result<tpuport_model::Model, FormatError> {
    safetensors::import_with(p, &Limits::default())
}

fn err(p: &Path) -> String {
    let e = import(p).unwrap_err();
    e.to_string()
}

#[test]
fn reads_tensors_metadata_and_maps_bytes() {
    let d = tempfile::tempdir().unwrap();
    let mut data: Vec<u8> =
        [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    data.extend_from_slice(&[0x80, 0x3f, 0x00, 0x40]); // bf16 1.0, 2.0
    let h = r#"{"__metadata__":{"format":"pt","note":"x"},"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[24,28]}}   "#;
    let p = write(d.path(), "m.safetensors", &st_bytes(h, &data));
    let m = tpuport_formats::open(&p, &ImportOptions::default()).unwrap();
    assert_eq!(m.format, ModelFormat::Safetensors);
    assert_eq!(m.metadata.producer.as_deref(), Some("pt"));
    assert_eq!(m.metadata.framework, Framework::PyTorch);
    assert!(m.metadata.properties.contains(&("note".to_owned(), "x".to_owned())));
    let w = m.weights.by_name("w").unwrap();
    assert_eq!((w.dtype, w.shape.clone()), (DType::F32, vec![2, 3]));
    assert!(matches!(w.data, WeightData::Mapped { .. }));
    assert_eq!(&*w.bytes().unwrap(), &data[..24]);
    let b = m.weights.by_name("b").unwrap();
    assert_eq!(b.dtype, DType::BF16);
    assert_eq!(&*b.bytes().unwrap(), &data[24..]);
    assert_eq!(m.weights.total_elements(), 8);
    assert!(m.notes.is_empty(), "{:?}", m.notes);
}

#[test]
fn every_safetensors_dtype_maps() {
    let cases = [
        ("BOOL", DType::Bool, 1),
        ("U8", DType::U8, 1),
        ("I8", DType::I8, 1),
        ("U16", DType::U16, 2),
        ("I16", DType::I16, 2),
        ("U32", DType::U32, 4),
        ("I32", DType::I32, 4),
        ("U64", DType::U64, 8),
        ("I64", DType::I64, 8),
        ("F16", DType::F16, 2),
        ("BF16", DType::BF16, 2),
        ("F32", DType::F32, 4),
        ("F64", DType::F64, 8),
        ("C64", DType::C64, 8),
        ("F8_E4M3", DType::F8E4M3FN, 1),
        ("F8_E5M2", DType::F8E5M2, 1),
    ];
    let d = tempfile::tempdir().unwrap();
    for (name, dt, size) in cases {
        let h =
            format!(r#"{{"t":{{"dtype":"{name}","shape":[3],"data_offsets":[0,{}]}}}}"#, 3 * size);
        let p = write(d.path(), "t.safetensors", &st_bytes(&h, &vec![0u8; 3 * size]));
        let m = import(&p).unwrap();
        assert_eq!(m.weights.by_name("t").unwrap().dtype, dt, "{name}");
        assert_eq!(safetensors::dtype_name(dt), Some(name));
    }
    let h = r#"{"t":{"dtype":"F8_E8M0","shape":[1],"data_offsets":[0,1]}}"#;
    let p = write(d.path(), "e.safetensors", &st_bytes(h, &[0]));
    assert!(matches!(import(&p), Err(FormatError::Unsupported { .. })));
    let h = r#"{"t":{"dtype":"F99","shape":[1],"data_offsets":[0,1]}}"#;
    let p = write(d.path(), "u.safetensors", &st_bytes(h, &[0]));
    assert!(err(&p).contains("tensor `t`: unknown dtype `F99`"), "{}", err(&p));
}

#[test]
fn terabyte_header_claim_is_rejected_before_allocating() {
    let d = tempfile::tempdir().unwrap();
    let mut b = vec![0u8; 4096];
    b[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    b[8] = b'{';
    let p = write(d.path(), "big.safetensors", &b);
    let e = err(&p);
    assert!(e.contains("header length 1099511627776 exceeds file size 4096"), "{e}");
    assert!(e.contains("big.safetensors"), "{e}");
}

#[test]
fn header_length_past_eof_truncation_and_limit() {
    let d = tempfile::tempdir().unwrap();
    let mut b = st_bytes(r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#, &[1, 2, 3, 4]);
    b.truncate(30);
    let p = write(d.path(), "trunc.safetensors", &b);
    assert!(err(&p).contains("exceeds file size 30"), "{}", err(&p));
    let p = write(d.path(), "tiny.safetensors", &[1, 2, 3]);
    assert!(err(&p).contains("shorter than the 8-byte header length"), "{}", err(&p));
    let p = write(d.path(), "empty.safetensors", &[]);
    assert!(import(&p).is_err());
    let ok = st_bytes(r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#, &[1, 2, 3, 4]);
    let p = write(d.path(), "ok.safetensors", &ok);
    let lim = Limits { max_header_bytes: 16, ..Limits::default() };
    let e = safetensors::import_with(&p, &lim).unwrap_err().to_string();
    assert!(e.contains("exceeds the limit of 16 bytes"), "{e}");
    // tensor data cut off: offsets run past the buffer
    let mut cut = ok.clone();
    cut.truncate(ok.len() - 2);
    let p = write(d.path(), "cut.safetensors", &cut);
    assert!(err(&p).contains("run past the end of the 2-byte data buffer"), "{}", err(&p));
}

#[test]
fn malformed_headers_name_the_problem() {
    let d = tempfile::tempdir().unwrap();
    let cases: &[(&str, usize, &str)] = &[
        (r#"{"a": "#, 0, "not valid JSON"),
        (r#"[1,2]"#, 0, "not valid JSON"),
        (
            r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}}"#,
            8,
            "data_offsets [8, 4] are out of order",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}"#,
            12,
            "overlap",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}}"#,
            20,
            "need 24 bytes but data_offsets [0, 20] span 20",
        ),
        (
            r#"{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}"#,
            4,
            "more elements than fit in 64 bits",
        ),
        (r#"{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}"#, 4, "tensor `a`"),
        (r#"{"a":{"dtype":"F32","shape":[1]}}"#, 4, "missing field `data_offsets`"),
        (
            r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#,
            2,
            "appears twice",
        ),
        (r#"{"__metadata__":{"format":3}}"#, 0, "__metadata__"),
    ];
    for (h, n, want) in cases {
        let p = write(d.path(), "bad.safetensors", &st_bytes(h, &vec![0u8; *n]));
        let e = err(&p);
        assert!(e.contains(want), "{h}: {e}");
        assert!(e.contains("bad.safetensors"), "{e}");
    }
}

#[test]
fn unused_bytes_are_a_warning() {
    let d = tempfile::tempdir().unwrap();
    let h = r#"{"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},"z":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}"#;
    let p = write(d.path(), "gap.safetensors", &st_bytes(h, &[9, 9, 1, 2, 9]));
    let m = import(&p).unwrap();
    assert_eq!(&*m.weights.by_name("a").unwrap().bytes().unwrap(), &[1, 2]);
    assert_eq!(m.weights.by_name("z").unwrap().elements(), 0);
    assert!(
        m.notes.iter().any(|n| n.code == "safetensors-gap" && n.message.contains("3 bytes")),
        "{:?}",
        m.notes
    );
}

fn shard(dir: &Path, name: &str, tensors: &[(&str, u8)]) {
    let mut entries = Vec::new();
    let mut data = Vec::new();
    for (t, v) in tensors {
        let b = data.len();
        data.extend_from_slice(&[*v; 4]);
        entries
            .push(format!(r#""{t}":{{"dtype":"F32","shape":[1],"data_offsets":[{b},{}]}}"#, b + 4));
    }
    let h = format!(r#"{{"__metadata__":{{"format":"pt"}},{}}}"#, entries.join(","));
    write(dir, name, &st_bytes(&h, &data));
}

fn index(dir: &Path, map: &[(&str, &str)], total: u64) -> PathBuf {
    let wm: Vec<String> = map.iter().map(|(t, f)| format!(r#""{t}":"{f}""#)).collect();
    let j = format!(r#"{{"metadata":{{"total_size":{total}}},"weight_map":{{{}}}}}"#, wm.join(","));
    write(dir, "model.safetensors.index.json", j.as_bytes())
}

#[test]
fn sharded_index_and_folder() {
    let d = tempfile::tempdir().unwrap();
    shard(d.path(), "model-00001-of-00002.safetensors", &[("a", 1), ("b", 2)]);
    shard(d.path(), "model-00002-of-00002.safetensors", &[("c", 3)]);
    let p = index(
        d.path(),
        &[
            ("a", "model-00001-of-00002.safetensors"),
            ("b", "model-00001-of-00002.safetensors"),
            ("c", "model-00002-of-00002.safetensors"),
        ],
        12,
    );
    let imp = safetensors::SafetensorsImporter;
    assert!(imp.sniff(&p, b"{"));
    assert!(imp.sniff(d.path(), b""));
    for path in [p.as_path(), d.path()] {
        let m = tpuport_formats::open(path, &ImportOptions::default()).unwrap();
        assert_eq!(m.weights.len(), 3);
        assert_eq!(&*m.weights.by_name("c").unwrap().bytes().unwrap(), &[3; 4]);
        assert_eq!(m.metadata.producer.as_deref(), Some("pt"));
        assert!(m.notes.is_empty(), "{:?}", m.notes);
    }
    // wrong total_size -> warning
    let p = index(
        d.path(),
        &[
            ("a", "model-00001-of-00002.safetensors"),
            ("b", "model-00001-of-00002.safetensors"),
            ("c", "model-00002-of-00002.safetensors"),
        ],
        99,
    );
    let m = import(&p).unwrap();
    assert!(m.notes.iter().any(|n| n.code == "index-total-size"));
    // tensor in a shard but not in the map -> warning, still imported
    let p = index(
        d.path(),
        &[("a", "model-00001-of-00002.safetensors"), ("c", "model-00002-of-00002.safetensors")],
        12,
    );
    let m = import(&p).unwrap();
    assert!(m.weights.by_name("b").is_some());
    assert!(
        m.notes.iter().any(|n| n.code == "shard-unlisted-tensor" && n.level == NoteLevel::Warning)
    );
    // mapped tensor missing from its shard -> error
    let p = index(
        d.path(),
        &[("a", "model-00001-of-00002.safetensors"), ("zz", "model-00002-of-00002.safetensors")],
        12,
    );
    let e = err(&p);
    assert!(
        e.contains(
            "puts `zz` in model-00002-of-00002.safetensors, but that shard does not hold it"
        ),
        "{e}"
    );
    // missing shard file
    let p = index(d.path(), &[("a", "model-00009.safetensors")], 4);
    assert!(err(&p).contains("does not exist"));
    // escaping paths
    for bad in ["../x.safetensors", "/etc/passwd", ""] {
        let p = index(d.path(), &[("a", bad)], 4);
        assert!(err(&p).contains("outside the index's folder"), "{bad}: {}", err(&p));
    }
}

#[test]
fn sniffing() {
    let imp = safetensors::SafetensorsImporter;
    let mut head = 100u64.to_le_bytes().to_vec();
    head.push(b'{');
    assert!(imp.sniff(Path::new("weights.bin"), &head));
    assert!(!imp.sniff(Path::new("x.onnx"), b"\x08\x07\x12"));
    assert!(imp.sniff(Path::new("a/model.safetensors"), b""));
    assert!(!imp.sniff(Path::new("x.npy"), b"\x93NUMPY\x01\x00"));
}

#[test]
fn folder_with_one_file() {
    let d = tempfile::tempdir().unwrap();
    let h = r#"{"a":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}}"#;
    write(d.path(), "only.safetensors", &st_bytes(h, &7i32.to_le_bytes()));
    let m = tpuport_formats::open(d.path(), &ImportOptions::default()).unwrap();
    assert_eq!(&*m.weights.by_name("a").unwrap().bytes().unwrap(), &7i32.to_le_bytes());
    write(d.path(), "second.safetensors", &st_bytes(h, &7i32.to_le_bytes()));
    assert!(import(d.path()).is_err());
}
