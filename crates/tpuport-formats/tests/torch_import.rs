//! Torch checkpoint import on hand-assembled zips and pickles: tensors, views, hostile globals,
//! zip bombs, truncation and resource limits.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use tpuport_formats::torch::{self, GlobalClass, TorchImporter};
use tpuport_formats::{FormatError, ImportOptions, Importer, Limits};
use tpuport_model::{DType, ModelFormat, NoteLevel, WeightData};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

/// A tiny pickle assembler (protocol 2).
struct Pk(Vec<u8>);

impl Pk {
    fn new() -> Pk {
        Pk(vec![0x80, 2])
    }
    fn op(&mut self, b: &[u8]) -> &mut Pk {
        self.0.extend_from_slice(b);
        self
    }
    fn global(&mut self, m: &str, n: &str) -> &mut Pk {
        self.op(format!("c{m}\n{n}\n").as_bytes())
    }
    fn s(&mut self, s: &str) -> &mut Pk {
        self.op(b"X").op(&u32::try_from(s.len()).unwrap().to_le_bytes()).op(s.as_bytes())
    }
    fn int(&mut self, i: u32) -> &mut Pk {
        self.op(b"J").op(&i.to_le_bytes())
    }
    fn ints(&mut self, v: &[u32]) -> &mut Pk {
        self.op(b"(");
        for &i in v {
            self.int(i);
        }
        self.op(b"t")
    }
    /// `_rebuild_tensor_v2(persid('storage', torch.<st>, key, 'cpu', numel), offset, shape, stride, False, OrderedDict())`
    fn tensor(
        &mut self,
        st: &str,
        key: &str,
        numel: u32,
        offset: u32,
        shape: &[u32],
        stride: &[u32],
    ) -> &mut Pk {
        self.global("torch._utils", "_rebuild_tensor_v2").op(b"(");
        self.op(b"(").s("storage").global("torch", st).s(key).s("cpu").int(numel).op(b"tQ");
        self.int(offset).ints(shape).ints(stride).op(b"\x89");
        self.global("collections", "OrderedDict").op(b")R");
        self.op(b"tR")
    }
    fn done(&mut self) -> Vec<u8> {
        self.op(b".");
        std::mem::take(&mut self.0)
    }
}

fn zip_bytes(members: &[(&str, &[u8], bool)]) -> Vec<u8> {
    let mut z = ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data, stored) in members {
        let m = if *stored { CompressionMethod::Stored } else { CompressionMethod::Deflated };
        z.start_file(*name, SimpleFileOptions::default().compression_method(m)).unwrap();
        z.write_all(data).unwrap();
    }
    z.finish().unwrap().into_inner()
}

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn write(dir: &Path, name: &str, b: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, b).unwrap();
    p
}

/// A state dict `{w: f32[2,3], v: view of w's storage, i: i64[2]}` in torch's zip layout.
fn good_checkpoint(pkl: &[u8]) -> Vec<u8> {
    let w = f32s(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let i: Vec<u8> = [7i64, -1].iter().flat_map(|x| x.to_le_bytes()).collect();
    zip_bytes(&[
        ("archive/data.pkl", pkl, true),
        ("archive/.format_version", b"1", true),
        ("archive/byteorder", b"little", true),
        ("archive/data/0", &w, true),
        ("archive/data/1", &i, true),
        ("archive/version", b"3\n", true),
    ])
}

fn state_dict_pickle() -> Vec<u8> {
    let mut p = Pk::new();
    p.op(b"}(");
    p.s("w").tensor("FloatStorage", "0", 6, 0, &[2, 3], &[3, 1]);
    p.s("v").tensor("FloatStorage", "0", 6, 1, &[2, 2], &[1, 2]);
    p.s("i").tensor("LongStorage", "1", 2, 0, &[2], &[1]);
    p.op(b"u").done()
}

fn import(p: &Path, lim: &Limits) -> Result<tpuport_model::Model, FormatError> {
    torch::import_with(p, lim)
}

#[test]
fn reads_a_hand_built_state_dict() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "m.pt", &good_checkpoint(&state_dict_pickle()));
    let m = tpuport_formats::open(&p, &ImportOptions::default()).unwrap();
    assert_eq!(m.format, ModelFormat::TorchZip);
    assert_eq!(m.weights.len(), 3);
    let w = m.weights.by_name("w").unwrap();
    assert_eq!((w.dtype, w.shape.clone()), (DType::F32, vec![2, 3]));
    assert!(matches!(w.data, WeightData::Mapped { .. }));
    assert_eq!(&*w.bytes().unwrap(), &f32s(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0])[..]);
    // non-contiguous view: gathered into row-major order
    let v = m.weights.by_name("v").unwrap();
    assert!(matches!(v.data, WeightData::Inline(_)));
    assert_eq!(&*v.bytes().unwrap(), &f32s(&[1.0, 3.0, 2.0, 4.0])[..]);
    let i = m.weights.by_name("i").unwrap();
    assert_eq!(i.dtype, DType::I64);
    assert_eq!(&i.bytes().unwrap()[..8], &7i64.to_le_bytes());
    assert!(m.metadata.properties.iter().any(|(k, v)| k == "torch.byteorder" && v == "little"));
    let rep = torch::scan(&p).unwrap();
    assert!(rep.is_clean(), "{:?}", rep.notes);
    assert!(rep.globals.iter().all(|g| g.class == GlobalClass::Allowed));
}

#[test]
fn os_system_reduce_is_refused_with_its_name() {
    let d = tempfile::tempdir().unwrap();
    let mut p = Pk::new();
    p.global("os", "system").op(b"(").s("echo pwned > /tmp/tpuport-pwned").op(b"tR");
    let p = write(d.path(), "evil.pt", &good_checkpoint(&p.done()));
    let e = import(&p, &Limits::default()).unwrap_err();
    assert!(matches!(e, FormatError::Unsafe { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("pickle global os.system is outside the tensor allow-list"), "{msg}");
    assert!(msg.contains("evil.pt"), "{msg}");
    assert!(!Path::new("/tmp/tpuport-pwned").exists());

    let rep = torch::scan(&p).unwrap();
    assert!(!rep.is_clean());
    let flagged: Vec<_> = rep.flagged().collect();
    assert_eq!(flagged.len(), 1);
    assert_eq!(flagged[0].qualified(), "os.system");
    assert_eq!(flagged[0].class, GlobalClass::Dangerous);
    assert!(rep.notes.iter().any(|n| n.level == NoteLevel::Security
        && n.code == "pickle-global"
        && n.message.contains("os.system")));
}

#[test]
fn hidden_globals_inside_a_valid_state_dict_are_all_named() {
    let d = tempfile::tempdir().unwrap();
    let mut p = Pk::new();
    p.op(b"}(");
    p.s("w").tensor("FloatStorage", "0", 6, 0, &[2, 3], &[3, 1]);
    p.s("x").global("__builtin__", "exec").op(b"(").s("import os").op(b"tR");
    p.s("y").global("posix", "system").op(b"(").s("id").op(b"tR");
    p.s("z").global("__main__", "Net").op(b")\x81");
    let bytes = p.op(b"u").done();
    let p = write(d.path(), "evil2.pt", &good_checkpoint(&bytes));
    let msg = import(&p, &Limits::default()).unwrap_err().to_string();
    assert!(
        msg.contains("pickle globals __builtin__.exec, posix.system, __main__.Net are outside the tensor allow-list"),
        "{msg}"
    );
    let rep = torch::scan(&p).unwrap();
    let classes: Vec<_> = rep.flagged().map(|g| (g.qualified(), g.class)).collect();
    assert_eq!(
        classes,
        vec![
            ("__builtin__.exec".to_owned(), GlobalClass::Dangerous),
            ("posix.system".to_owned(), GlobalClass::Dangerous),
            ("__main__.Net".to_owned(), GlobalClass::Unknown),
        ]
    );
}

#[test]
fn protocol_4_stack_global_is_caught() {
    let d = tempfile::tempdir().unwrap();
    let mut b = vec![0x80, 4, 0x95];
    b.extend_from_slice(&30u64.to_le_bytes());
    for s in ["builtins", "eval"] {
        b.push(0x8c);
        b.push(u8::try_from(s.len()).unwrap());
        b.extend_from_slice(s.as_bytes());
        b.push(0x94);
    }
    b.extend_from_slice(b"\x93\x8c\x011\x85R.");
    let p = write(d.path(), "evil4.pt", &good_checkpoint(&b));
    let msg = import(&p, &Limits::default()).unwrap_err().to_string();
    assert!(msg.contains("pickle global builtins.eval is outside the tensor allow-list"), "{msg}");
}

#[test]
fn unsafe_global_wins_over_a_later_parse_error() {
    let d = tempfile::tempdir().unwrap();
    let mut p = Pk::new();
    p.global("subprocess", "Popen").op(b"\xff");
    let p = write(d.path(), "evil3.pt", &good_checkpoint(&p.0));
    let e = import(&p, &Limits::default()).unwrap_err();
    assert!(matches!(e, FormatError::Unsafe { .. }), "{e}");
    let rep = torch::scan(&p).unwrap();
    assert!(rep.flagged().any(|g| g.qualified() == "subprocess.Popen"));
    assert!(rep.notes.iter().any(|n| n.code == "pickle-unreadable"));
}

#[test]
fn zip_bomb_declared_size_over_the_limit() {
    let d = tempfile::tempdir().unwrap();
    let zeros = vec![0u8; 200_000];
    let z =
        zip_bytes(&[("archive/data.pkl", &zeros, false), ("archive/byteorder", b"little", true)]);
    let p = write(d.path(), "bomb.pt", &z);
    let lim = Limits { max_inflated_bytes: 100_000, ..Limits::default() };
    let msg = import(&p, &lim).unwrap_err().to_string();
    assert!(
        msg.contains(
            "declares 200000 bytes uncompressed, over the remaining inflation limit of 100000 bytes"
        ),
        "{msg}"
    );
}

#[test]
fn zip_bomb_inflating_past_its_declared_size() {
    let d = tempfile::tempdir().unwrap();
    let zeros = vec![0u8; 1 << 20];
    let mut z = zip_bytes(&[("archive/data.pkl", &zeros, false)]);
    // Claim 100 bytes in both the local and the central header.
    let lh = z.windows(4).position(|w| w == b"PK\x03\x04").unwrap();
    z[lh + 22..lh + 26].copy_from_slice(&100u32.to_le_bytes());
    let ch = z.windows(4).position(|w| w == b"PK\x01\x02").unwrap();
    z[ch + 24..ch + 28].copy_from_slice(&100u32.to_le_bytes());
    let p = write(d.path(), "bomb2.pt", &z);
    let msg = import(&p, &Limits::default()).unwrap_err().to_string();
    assert!(msg.contains("inflates past its declared 100 bytes"), "{msg}");
}

#[test]
fn truncated_and_inconsistent_checkpoints() {
    let d = tempfile::tempdir().unwrap();
    let good = good_checkpoint(&state_dict_pickle());
    let p = write(d.path(), "trunc.pt", &good[..good.len() / 2]);
    assert!(import(&p, &Limits::default()).unwrap_err().to_string().contains("not a readable zip"));

    // truncated pickle
    let pk = state_dict_pickle();
    let p = write(d.path(), "tpk.pt", &good_checkpoint(&pk[..pk.len() - 10]));
    let msg = import(&p, &Limits::default()).unwrap_err().to_string();
    assert!(msg.contains("archive/data.pkl: pickle byte"), "{msg}");

    // storage member missing
    let mut p2 = Pk::new();
    p2.op(b"}(").s("w").tensor("FloatStorage", "9", 6, 0, &[6], &[1]).op(b"u");
    let p = write(d.path(), "miss.pt", &good_checkpoint(&p2.done()));
    let msg = import(&p, &Limits::default()).unwrap_err().to_string();
    assert!(msg.contains("storage member archive/data/9 is missing"), "{msg}");

    // declared numel disagrees with the member size
    let mut p3 = Pk::new();
    p3.op(b"}(").s("w").tensor("FloatStorage", "0", 5, 0, &[5], &[1]).op(b"u");
    let p = write(d.path(), "size.pt", &good_checkpoint(&p3.done()));
    let msg = import(&p, &Limits::default()).unwrap_err().to_string();
    assert!(msg.contains("holds 24 bytes but its persistent id declares 5 f32 elements"), "{msg}");

    // view reaching past its storage
    let mut p4 = Pk::new();
    p4.op(b"}(").s("w").tensor("FloatStorage", "0", 6, 0, &[3, 3], &[3, 1]).op(b"u");
    let p = write(d.path(), "view.pt", &good_checkpoint(&p4.done()));
    let msg = import(&p, &Limits::default()).unwrap_err().to_string();
    assert!(msg.contains("reaches byte 36 of a 24-byte storage"), "{msg}");

    // a zip without data.pkl
    let z = zip_bytes(&[("x/other.txt", b"hi", true)]);
    let p = write(d.path(), "nopkl.pt", &z);
    assert!(
        import(&p, &Limits::default()).unwrap_err().to_string().contains("no <prefix>/data.pkl")
    );
}

#[test]
fn pickle_resource_limits() {
    let d = tempfile::tempdir().unwrap();
    // many objects
    let mut p = Pk::new();
    p.op(b"(");
    for _ in 0..500 {
        p.op(b"N");
    }
    p.op(b"l");
    let p = write(d.path(), "many.pt", &good_checkpoint(&p.done()));
    let lim = Limits { max_items: 100, ..Limits::default() };
    let msg = import(&p, &lim).unwrap_err().to_string();
    assert!(msg.contains("more than 100"), "{msg}");
    // deep nesting of dicts
    let mut p = Pk::new();
    for _ in 0..10 {
        p.op(b"}").s("k");
    }
    p.op(b"N");
    for _ in 0..10 {
        p.op(b"s");
    }
    let p = write(d.path(), "deep.pt", &good_checkpoint(&p.done()));
    let lim = Limits { max_nesting: 3, ..Limits::default() };
    let msg = import(&p, &lim).unwrap_err().to_string();
    assert!(msg.contains("nested deeper than 3"), "{msg}");
    // string length beyond the pickle
    let mut b = vec![0x80, 2, b'X'];
    b.extend_from_slice(&u32::MAX.to_le_bytes());
    let p = write(d.path(), "len.pt", &good_checkpoint(&b));
    let msg = import(&p, &Limits::default()).unwrap_err().to_string();
    assert!(msg.contains("remain"), "{msg}");
}

#[test]
fn nested_checkpoint_names_and_non_tensors() {
    let d = tempfile::tempdir().unwrap();
    let mut p = Pk::new();
    p.op(b"}(");
    p.s("model").global("collections", "OrderedDict").op(b")R(");
    p.s("fc.weight").tensor("FloatStorage", "0", 6, 0, &[2, 3], &[3, 1]);
    p.op(b"u");
    p.s("optimizer").op(b"}(").s("state").op(b"}(").int(0).op(b"}(").s("exp_avg");
    p.tensor("LongStorage", "1", 2, 0, &[2], &[1]).op(b"uu");
    p.s("param_groups").op(b"](").op(b"}(").s("lr").op(b"G?PbM\xd2\xf1\xa9\xfc").op(b"ue").op(b"u");
    p.s("epoch").int(3);
    p.op(b"u");
    let path = write(d.path(), "ck.pth", &good_checkpoint(&p.done()));
    let m = tpuport_formats::open(&path, &ImportOptions::default()).unwrap();
    let names: Vec<&str> = m.weights.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, vec!["model.fc.weight", "optimizer.state.0.exp_avg"]);
    assert!(m.notes.iter().any(|n| n.code == "torch-non-tensor"));
}

#[test]
fn sniffing() {
    let imp = TorchImporter;
    let d = tempfile::tempdir().unwrap();
    let z = good_checkpoint(&state_dict_pickle());
    let p = write(d.path(), "pytorch_model.bin", &z);
    assert!(imp.sniff(&p, &z[..64]));
    assert!(imp.sniff(Path::new("x.data"), &z[..64]), "zip whose first member is data.pkl");
    assert!(!imp.sniff(Path::new("model.onnx.bin"), b"\x01\x02\x03\x04"));
    let npz = zip_bytes(&[("a.npy", b"\x93NUMPY", true)]);
    assert!(!imp.sniff(Path::new("x.npz"), &npz[..40]));
}

#[test]
fn scan_reads_a_bare_pickle_and_rejects_other_files() {
    let d = tempfile::tempdir().unwrap();
    let mut p = Pk::new();
    p.global("webbrowser", "open").op(b"(").s("http://x").op(b"tR");
    p.global("runpy", "_run_code").op(b"(").s("1").op(b"tR");
    let p = write(d.path(), "payload.pkl", &p.op(b"\x86").done());
    let rep = torch::scan(&p).unwrap();
    assert_eq!(rep.format, "pickle");
    let names: Vec<String> =
        rep.flagged().map(tpuport_formats::torch::GlobalUse::qualified).collect();
    assert_eq!(names, vec!["webbrowser.open", "runpy._run_code"]);
    assert_eq!(rep.notes.iter().filter(|n| n.level == NoteLevel::Security).count(), 2);
    let p = write(d.path(), "text.pt", b"hello");
    assert!(torch::scan(&p).is_err());
    assert!(import(&p, &Limits::default()).unwrap_err().to_string().contains("neither a zip"));
}
