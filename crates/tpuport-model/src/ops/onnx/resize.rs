//! The arithmetic of ONNX `Resize` that both its lowering (`tpuport-lower`) and its cost
//! formula (`tpuport-analysis`) need: where an output position reads the input, and the cubic
//! convolution weights. Spec: <https://onnx.ai/onnx/operators/onnx__Resize.html>.

/// The input coordinate output position `o` maps to along one axis of `inn` input and `out`
/// output elements at `scale`, by `coordinate_transformation_mode`; `None` for a mode not
/// listed here (`tf_crop_and_resize` needs the `roi`).
#[must_use]
#[allow(clippy::cast_precision_loss, reason = "positions and sizes of one axis")]
pub fn source_coordinate(ctm: &str, o: u64, inn: u64, out: u64, scale: f64) -> Option<f64> {
    let (xr, n) = (o as f64, inn as f64);
    Some(match ctm {
        "half_pixel" => (xr + 0.5) / scale - 0.5,
        "pytorch_half_pixel" => {
            if out > 1 {
                (xr + 0.5) / scale - 0.5
            } else {
                0.0
            }
        }
        "align_corners" => {
            if out == 1 {
                0.0
            } else {
                xr * (n - 1.0) / (n * scale - 1.0)
            }
        }
        "asymmetric" => xr / scale,
        "half_pixel_symmetric" => {
            let adj = out as f64 / (scale * n);
            n / 2.0 * (1.0 - adj) + (xr + 0.5) / scale - 0.5
        }
        _ => return None,
    })
}

/// The four cubic weights for the inputs at `⌊x⌋ − 1 … ⌊x⌋ + 2`, `t = x − ⌊x⌋`, with
/// `cubic_coeff_a = a`.
#[must_use]
pub fn cubic_weights(t: f64, a: f64) -> [f64; 4] {
    let (p, q, r) = (t + 1.0, 1.0 - t, 2.0 - t);
    [
        ((a * p - 5.0 * a) * p + 8.0 * a) * p - 4.0 * a,
        ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0,
        ((a + 2.0) * q - (a + 3.0)) * q * q + 1.0,
        ((a * r - 5.0 * a) * r + 8.0 * a) * r - 4.0 * a,
    ]
}
