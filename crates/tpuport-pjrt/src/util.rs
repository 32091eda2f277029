//! Small helpers for reading C outputs.

use std::ffi::c_char;

/// Copies a (pointer, length) C string into a `String`, replacing invalid UTF-8.
///
/// # Safety
/// When non-null, `ptr` must be valid for reads of `len` bytes.
pub(crate) unsafe fn lossy(ptr: *const c_char, len: usize) -> String {
    if ptr.is_null() || len == 0 {
        return String::new();
    }
    // SAFETY: non-null and valid for `len` bytes per the caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    String::from_utf8_lossy(bytes).into_owned()
}

/// Copies a (pointer, count) C array into a `Vec`.
///
/// # Safety
/// When non-null, `ptr` must be valid for reads of `len` elements.
pub(crate) unsafe fn to_vec<T: Copy>(ptr: *const T, len: usize) -> Vec<T> {
    if ptr.is_null() || len == 0 {
        return Vec::new();
    }
    // SAFETY: non-null and valid for `len` elements per the caller's contract.
    unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec()
}
