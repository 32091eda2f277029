//! Bad, truncated and hostile files: one clear line naming the file and the problem, exit 2,
//! no panic, bounded memory.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;

use common::{run_python, tpuport};

/// Asserts exit 2 and a single `error:` line that names the file and contains every `needle`
/// (case-insensitive).
fn assert_rejected(path: &Path, needles: &[&str]) {
    let o = tpuport(&["inspect", path.to_str().unwrap()]);
    let name = path.file_name().unwrap().to_str().unwrap();
    assert_eq!(o.code, 2, "{name}: exit code; stderr: {}", o.stderr);
    assert!(o.stdout.is_empty(), "{name}: nothing on stdout, got {}", o.stdout);
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{name}: want one line, got {:?}", o.stderr);
    let line = lines[0].to_lowercase();
    assert!(line.starts_with("error: "), "{name}: {line}");
    assert!(line.contains(&name.to_lowercase()), "{name}: message does not name the file: {line}");
    assert!(!line.contains("panicked"), "{name}: {line}");
    for n in needles {
        assert!(line.contains(&n.to_lowercase()), "{name}: `{n}` missing from: {line}");
    }
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn missing_and_unknown_files() {
    let d = tmp();
    assert_rejected(&d.path().join("nope.onnx"), &["no such file"]);
    let p = d.path().join("notes.txt");
    std::fs::write(&p, "hello").unwrap();
    assert_rejected(&p, &["not a recognised"]);
}

#[test]
fn safetensors_hostile_header_lengths() {
    let d = tmp();
    // A header that claims 1 TB: must be refused before anything is allocated.
    let p = d.path().join("huge_header.safetensors");
    let mut b = (1u64 << 40).to_le_bytes().to_vec();
    b.extend_from_slice(b"{}");
    std::fs::write(&p, &b).unwrap();
    assert_rejected(&p, &["header"]);
    let (code, mib) = common::peak_rss_mib(&["inspect", p.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(mib < 64, "a 1 TB header claim peaked at {mib} MiB");
    // A header length past the end of the file.
    let p = d.path().join("past_end.safetensors");
    let mut b = 1000u64.to_le_bytes().to_vec();
    b.extend_from_slice(b"{\"a\":1}");
    std::fs::write(&p, &b).unwrap();
    assert_rejected(&p, &["header"]);
    // Tensor data cut off.
    let p = d.path().join("truncated.safetensors");
    let h = br#"{"w":{"dtype":"F32","shape":[4,4],"data_offsets":[0,64]}}"#;
    let mut b = (h.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(h);
    b.extend_from_slice(&[0u8; 20]);
    std::fs::write(&p, &b).unwrap();
    assert_rejected(&p, &["w"]);
    // Shorter than the 8-byte length prefix.
    let p = d.path().join("tiny.safetensors");
    std::fs::write(&p, [1u8, 2, 3]).unwrap();
    assert_rejected(&p, &[]);
}

#[test]
fn onnx_garbage_truncated_cycle_and_dangling_input() {
    let d = tmp();
    let p = d.path().join("garbage.onnx");
    std::fs::write(
        &p,
        (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    assert_rejected(&p, &[]);
    let dir = d.path().to_str().unwrap();
    run_python(&format!(
        r#"
import onnx
from onnx import helper as h, TensorProto as T
def save(nodes, name, inputs=("x",)):
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info(i, T.FLOAT, [2]) for i in inputs],
                     [h.make_tensor_value_info("y", T.FLOAT, [2])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    onnx.save(m, "{dir}/" + name)
    return m
# y = Relu(b), b = Relu(y): a cycle
save([h.make_node("Relu", ["b"], ["y"], name="first"), h.make_node("Relu", ["y"], ["b"], name="second")], "cycle.onnx")
save([h.make_node("Add", ["x", "ghost"], ["y"], name="adder")], "dangling.onnx")
m = save([h.make_node("Relu", ["x"], ["y"], name="r")], "ok.onnx")
data = m.SerializeToString()
open("{dir}/truncated.onnx", "wb").write(data[: len(data) // 2])
"#
    ));
    assert_rejected(&d.path().join("cycle.onnx"), &["cycle"]);
    assert_rejected(&d.path().join("dangling.onnx"), &["ghost"]);
    assert_rejected(&d.path().join("truncated.onnx"), &[]);
    let ok = tpuport(&["inspect", d.path().join("ok.onnx").to_str().unwrap()]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
}

#[test]
fn deeply_nested_mlir_is_refused_not_a_stack_overflow() {
    let d = tmp();
    let p = d.path().join("deep.mlir");
    let depth = 200_000;
    // Valid generic-form nesting: an op whose region holds an op whose region holds ...
    let mut s = String::from("module {\n  func.func @main() -> () {\n");
    s.push_str(&"\"test.wrap\"() ({\n".repeat(depth));
    s.push_str(&"}) : () -> ()\n".repeat(depth));
    s.push_str("    func.return\n  }\n}\n");
    std::fs::write(&p, s).unwrap();
    assert_rejected(&p, &["nest"]);
    let p = d.path().join("unterminated.mlir");
    std::fs::write(&p, "module {\n  func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n")
        .unwrap();
    assert_rejected(&p, &[]);
}

#[test]
fn pickle_that_calls_os_system_is_refused() {
    let d = tmp();
    let dir = d.path().to_str().unwrap();
    run_python(&format!(
        r#"
import os, torch
class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > {dir}/pwned",))
torch.save({{"weight": torch.zeros(2), "payload": Evil()}}, "{dir}/evil.pt")
"#
    ));
    assert_rejected(&d.path().join("evil.pt"), &["system"]);
    assert!(!d.path().join("pwned").exists(), "the pickle was executed");
}

#[test]
fn zip_bomb_is_refused_with_bounded_memory() {
    let d = tmp();
    let dir = d.path().to_str().unwrap();
    // A torch-layout zip whose pickle member inflates to 1.5 GiB of zeros (about 1.5 MB on disk).
    run_python(&format!(
        r#"
import zipfile, zlib
with zipfile.ZipFile("{dir}/bomb.pt", "w", compression=zipfile.ZIP_DEFLATED) as z:
    with z.open("archive/data.pkl", "w", force_zip64=True) as f:
        chunk = bytes(1 << 24)
        for _ in range(96):
            f.write(chunk)
"#
    ));
    let bomb = d.path().join("bomb.pt");
    assert_rejected(&bomb, &["data.pkl"]);
    let (code, mib) = common::peak_rss_mib(&["inspect", bomb.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(mib < 256, "inspecting a zip bomb peaked at {mib} MiB");
}
