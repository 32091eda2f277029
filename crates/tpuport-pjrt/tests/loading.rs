//! Loading bad plugins: clear errors, never a crash.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use tpuport_pjrt::PjrtError;

/// Builds a tiny shared library from C source with the system C compiler (the one cargo links
/// with).
fn build_so(dir: &Path, name: &str, src: &str) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    let so = dir.join(format!("{name}.so"));
    std::fs::write(&c, src).unwrap();
    let st =
        Command::new("cc").args(["-shared", "-fPIC", "-o"]).arg(&so).arg(&c).status().expect("cc");
    assert!(st.success(), "cc failed for {name}");
    so
}

#[test]
fn a_library_without_get_pjrt_api_is_not_a_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let so = build_so(dir.path(), "noapi", "int something(void) { return 1; }\n");
    let e = tpuport_pjrt::load(&so).unwrap_err();
    assert!(matches!(e, PjrtError::NotAPlugin { .. }), "{e}");
    assert!(e.to_string().contains("does not export GetPjrtApi"), "{e}");
    assert!(e.to_string().contains("noapi.so"), "{e}");
}

#[test]
fn a_non_library_file_is_a_load_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plugin.so");
    std::fs::write(&p, b"this is not an ELF file\n").unwrap();
    let e = tpuport_pjrt::load(&p).unwrap_err();
    assert!(matches!(e, PjrtError::Load { .. }), "{e}");
    assert!(e.to_string().starts_with("cannot load PJRT plugin"), "{e}");
    let e = tpuport_pjrt::load(&dir.path().join("missing.so")).unwrap_err();
    assert!(matches!(e, PjrtError::Io { .. }), "{e}");
}

#[test]
fn null_table_and_wrong_major_version_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let null = build_so(dir.path(), "nullapi", "const void* GetPjrtApi(void) { return 0; }\n");
    let e = tpuport_pjrt::load(&null).unwrap_err();
    assert!(e.to_string().contains("GetPjrtApi returned null"), "{e}");
    // A table claiming PJRT API 1.3 with 64 function slots (all null).
    let major = build_so(
        dir.path(),
        "major1",
        "#include <stddef.h>\n\
         static struct { size_t size; void* ext; size_t vsize; void* vext; int major; int minor; void* fns[64]; } api =\n\
           { sizeof(api), 0, 24, 0, 1, 3, {0} };\n\
         const void* GetPjrtApi(void) { return &api; }\n",
    );
    let e = tpuport_pjrt::load(&major).unwrap_err();
    assert!(matches!(e, PjrtError::IncompatibleVersion { major: 1, minor: 3, .. }), "{e}");
    assert!(e.to_string().contains("PJRT API 1.3"), "{e}");
    // A table too small to hold even the error functions.
    let tiny = build_so(
        dir.path(),
        "tiny",
        "#include <stddef.h>\n\
         static struct { size_t size; void* ext; size_t vsize; void* vext; int major; int minor; } api =\n\
           { sizeof(api), 0, 24, 0, 0, 81 };\n\
         const void* GetPjrtApi(void) { return &api; }\n",
    );
    let e = tpuport_pjrt::load(&tiny).unwrap_err();
    assert!(e.to_string().contains("PJRT_Api table is only 40 bytes"), "{e}");
}

#[test]
fn the_same_plugin_loads_once() {
    let a = common::cpu_plugin();
    let b = tpuport_pjrt::load(a.path()).unwrap();
    assert!(std::ptr::eq(a, b));
}
