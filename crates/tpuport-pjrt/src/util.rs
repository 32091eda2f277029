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

/// Packed 4-bit elements (two per byte, first element in the low nibble, as tpuport and ONNX
/// store them) to one element per byte, sign-extended when `signed` (the form the PJRT C API
/// moves 4-bit buffers in).
pub(crate) fn unpack_nibbles(packed: &[u8], n: u64, signed: bool) -> Vec<u8> {
    (0..n as usize)
        .map(|i| {
            let v = packed.get(i / 2).map_or(0, |b| (b >> (4 * (i % 2))) & 0x0f);
            if signed && v & 0x08 != 0 { v | 0xf0 } else { v }
        })
        .collect()
}

/// One 4-bit element per byte to packed storage (the inverse of [`unpack_nibbles`]).
pub(crate) fn pack_nibbles(unpacked: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; unpacked.len().div_ceil(2)];
    for (i, v) in unpacked.iter().enumerate() {
        out[i / 2] |= (v & 0x0f) << (4 * (i % 2));
    }
    out
}

#[cfg(test)]
mod nibble_tests {
    use super::*;

    #[test]
    fn nibbles_round_trip() {
        let packed = [0xf1u8, 0x07];
        let u = unpack_nibbles(&packed, 3, true);
        assert_eq!(u, vec![0x01, 0xff, 0x07]);
        assert_eq!(pack_nibbles(&u), vec![0xf1, 0x07]);
        assert_eq!(unpack_nibbles(&packed, 3, false), vec![0x01, 0x0f, 0x07]);
    }
}
