//! One image row: JPEG decode, resize to 224x224, normalise to NCHW f32, against the same
//! decode followed by the `image` crate's triangle-filter resize (what `tpuport batch` used
//! before its Pillow-arithmetic resampler) in the same run, and the decode alone.
//!
//! `cargo bench -p tpuport-batch --bench image_row`

#![allow(clippy::unwrap_used, clippy::cast_possible_truncation, reason = "bench")]

use criterion::{Criterion, criterion_group, criterion_main};
use tpuport_batch::image::{ImageSpec, Layout};

/// A camera-sized JPEG (quality 90) of smooth gradients plus noise, as
/// `scripts/bench/bench_batch.py` writes them.
fn jpeg(w: u32, h: u32) -> Vec<u8> {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let n = |k: u32| (seed >> (8 * k)) as i32 % 40;
        let base = [x * 255 / w, y * 255 / h, (x + y) * 127 / (w + h)];
        image::Rgb([0, 1, 2].map(|c| (base[c as usize] as i32 + n(c)).clamp(0, 255) as u8))
    });
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90).encode_image(&img).unwrap();
    out
}

fn bench(c: &mut Criterion) {
    let spec = ImageSpec {
        height: 224,
        width: 224,
        mean: [0.485, 0.456, 0.406],
        std: [0.229, 0.224, 0.225],
        layout: Layout::Nchw,
    };
    let mut g = c.benchmark_group("image_row");
    for (w, h) in [(640, 480), (480, 360)] {
        let bytes = jpeg(w, h);
        let mut out = Vec::with_capacity(spec.row_bytes());
        g.bench_function(format!("tpuport {w}x{h} -> 224x224"), |b| {
            b.iter(|| {
                out.clear();
                spec.decode_bytes_into(&bytes, &mut out).unwrap();
            });
        });
        g.bench_function(format!("decode only {w}x{h}"), |b| {
            b.iter(|| image::load_from_memory(&bytes).unwrap().into_rgb8());
        });
        g.bench_function(format!("baseline: decode + image::imageops::resize {w}x{h}"), |b| {
            b.iter(|| {
                let img = image::load_from_memory(&bytes).unwrap().into_rgb8();
                image::imageops::resize(&img, 224, 224, image::imageops::FilterType::Triangle)
            });
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
