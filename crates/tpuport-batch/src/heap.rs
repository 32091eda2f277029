//! Keeps glibc from growing the heap with the decode buffers of an image run.
//!
//! An image window is a 4.8 MB buffer (8 rows of 224×224×3 f32), and each JPEG decode makes
//! 1–3 MB of short-lived buffers in the decoder threads. glibc raises its mmap threshold to the
//! size of the largest mapped block it has freed (up to 32 MiB). After that, these buffers come
//! from the heap, where the small long-lived allocations made between them (row keys, each
//! window's outputs, kept until their part is written) pin the holes. The heap then grew by
//! about 0.4 MiB per image until the part was written: 299 MiB over 128 JPEGs, 755 MiB over
//! 1,280, with 1,024-row parts. A fixed threshold of 128 KiB (glibc's default starting value)
//! maps every large buffer and unmaps it when freed. The same runs with
//! `MALLOC_MMAP_THRESHOLD_=131072` stayed near 250 MiB (docs/batch.md, *Measured*).

/// Fixes glibc's mmap threshold at 128 KiB for this process. It does nothing on other C
/// libraries, or when `MALLOC_MMAP_THRESHOLD_` is set, which the user chose.
pub(crate) fn map_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some() {
            return;
        }
        const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
        #[allow(unsafe_code, reason = "one glibc tuning call; see SAFETY")]
        // SAFETY: `mallopt` takes two integers and only changes a glibc malloc parameter; it
        // touches no memory of ours, and glibc serialises it against allocations itself.
        unsafe {
            unsafe extern "C" {
                fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
            }
            mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        }
    }
}
