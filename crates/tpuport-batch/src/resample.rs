//! Bilinear resizing of packed RGB8 pixels with Pillow's arithmetic, so that an image row
//! equals what `Image.open(f).convert("RGB").resize((W, H), Image.BILINEAR)` gives the Python
//! pipelines users compare against (torchvision's PIL transforms included).
//!
//! The filter is the triangle `max(0, 1 - |x|)` widened by the scale when shrinking
//! (antialiased), applied as two separable passes: across each row, then down each column,
//! with an 8-bit result after each pass. Weights are normalised per output pixel and held as
//! fixed-point integers with 22 fractional bits; each sum starts at one half and is shifted
//! down and clamped to `0..=255`. That is Pillow's 8-bit-per-channel path (`Resample.c`), which
//! this reproduces value for value; the code is written here from that description.

/// Fractional bits of the fixed-point weights: 32 bits less 8 for the pixel and 2 of headroom
/// for the negative lobes other filters have.
const FRACTION_BITS: u32 = 22;

/// The weights of one pass: for output position `i`, the input positions
/// `first[i]..first[i] + count[i]` with weights `weights[i * width..][..count[i]]`.
struct Taps {
    first: Vec<usize>,
    count: Vec<usize>,
    weights: Vec<i32>,
    width: usize,
}

impl Taps {
    fn new(in_size: usize, out_size: usize) -> Taps {
        #![allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        // Image sides are below 2^15 (the decoder's limit), exact in f64.
        let scale = in_size as f64 / out_size as f64;
        let stretch = scale.max(1.0);
        let support = stretch;
        let width = support.ceil() as usize * 2 + 1;
        let mut taps = Taps {
            first: Vec::with_capacity(out_size),
            count: Vec::with_capacity(out_size),
            weights: vec![0; out_size * width],
            width,
        };
        let mut w = vec![0.0f64; width];
        for i in 0..out_size {
            let center = (i as f64 + 0.5) * scale;
            // `as` truncates toward zero, as C's int conversion does; both ends are clamped.
            let lo = ((center - support + 0.5) as i64).max(0) as usize;
            let hi = ((center + support + 0.5) as i64).min(in_size as i64) as usize;
            let n = hi.saturating_sub(lo).min(width);
            let mut total = 0.0;
            for (k, wk) in w.iter_mut().enumerate().take(n) {
                let x = ((k + lo) as f64 - center + 0.5) / stretch;
                *wk = (1.0 - x.abs()).max(0.0);
                total += *wk;
            }
            let row = &mut taps.weights[i * width..i * width + n];
            for (dst, &wk) in row.iter_mut().zip(&w) {
                let v = if total == 0.0 { wk } else { wk / total };
                let fixed = v * f64::from(1u32 << FRACTION_BITS);
                *dst = if v < 0.0 { (fixed - 0.5) as i32 } else { (fixed + 0.5) as i32 };
            }
            taps.first.push(lo);
            taps.count.push(n);
        }
        taps
    }

    fn of(&self, i: usize) -> (usize, &[i32]) {
        (self.first[i], &self.weights[i * self.width..i * self.width + self.count[i]])
    }
}

/// A fixed-point sum back to a pixel.
fn to_u8(sum: i32) -> u8 {
    #![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    (sum >> FRACTION_BITS).clamp(0, 255) as u8
}

const HALF: i32 = 1 << (FRACTION_BITS - 1);

/// Resizes `src` (`sh` rows of `sw` RGB pixels, packed) to `dh` rows of `dw` pixels.
/// A side that keeps its size is not filtered.
///
/// # Panics
/// When `src` is not `sw * sh * 3` bytes or a size is zero (the caller decoded the image and
/// checked the model's size).
pub(crate) fn resize_rgb8(src: &[u8], sw: usize, sh: usize, dw: usize, dh: usize) -> Vec<u8> {
    assert!(src.len() == sw * sh * 3 && sw > 0 && sh > 0 && dw > 0 && dh > 0);
    let vertical = (dh != sh).then(|| Taps::new(sh, dh));
    // Only the source rows some output row reads are resized across.
    let (top, bottom) = match &vertical {
        Some(t) => (t.first[0], t.first[dh - 1] + t.count[dh - 1]),
        None => (0, sh),
    };
    let across: Vec<u8>;
    let rows: &[u8] = if dw == sw {
        &src[top * sw * 3..bottom * sw * 3]
    } else {
        let t = Taps::new(sw, dw);
        let mut out = vec![0u8; (bottom - top) * dw * 3];
        for (y, line) in out.chunks_exact_mut(dw * 3).enumerate() {
            let s = &src[(top + y) * sw * 3..(top + y + 1) * sw * 3];
            for (x, px) in line.chunks_exact_mut(3).enumerate() {
                let (lo, w) = t.of(x);
                let (mut r, mut g, mut b) = (HALF, HALF, HALF);
                for (p, &wk) in s[lo * 3..(lo + w.len()) * 3].chunks_exact(3).zip(w) {
                    r += i32::from(p[0]) * wk;
                    g += i32::from(p[1]) * wk;
                    b += i32::from(p[2]) * wk;
                }
                px.copy_from_slice(&[to_u8(r), to_u8(g), to_u8(b)]);
            }
        }
        across = out;
        &across
    };
    let Some(t) = vertical else {
        return rows.to_vec();
    };
    let stride = dw * 3;
    let mut out = vec![0u8; dh * stride];
    let mut acc = vec![0i32; stride];
    for (y, line) in out.chunks_exact_mut(stride).enumerate() {
        let (lo, w) = t.of(y);
        acc.fill(HALF);
        for (k, &wk) in w.iter().enumerate() {
            let r = &rows[(lo - top + k) * stride..(lo - top + k + 1) * stride];
            for (a, &p) in acc.iter_mut().zip(r) {
                *a += i32::from(p) * wk;
            }
        }
        for (o, &a) in line.iter_mut().zip(&acc) {
            *o = to_u8(a);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gray(w: usize, h: usize, f: impl Fn(usize, usize) -> u8) -> Vec<u8> {
        let mut v = Vec::with_capacity(w * h * 3);
        for y in 0..h {
            for x in 0..w {
                let p = f(x, y);
                v.extend_from_slice(&[p, p, p]);
            }
        }
        v
    }

    #[test]
    fn weights_sum_to_one_and_cover_the_footprint() {
        for (i, o) in [(640, 224), (480, 224), (100, 224), (7, 3), (3, 7), (224, 224)] {
            let t = Taps::new(i, o);
            for k in 0..o {
                let (lo, w) = t.of(k);
                let sum: i32 = w.iter().sum();
                assert!(
                    (sum - (1 << FRACTION_BITS)).abs() <= w.len() as i32,
                    "{i}->{o} at {k}: {sum}"
                );
                assert!(lo + w.len() <= i);
            }
        }
    }

    #[test]
    fn a_flat_image_stays_flat_and_a_kept_size_is_a_copy() {
        let src = gray(640, 480, |_, _| 77);
        let out = resize_rgb8(&src, 640, 480, 224, 224);
        assert!(out.iter().all(|&p| p == 77));
        let src = gray(5, 4, |x, y| (x * 40 + y) as u8);
        assert_eq!(resize_rgb8(&src, 5, 4, 5, 4), src);
    }

    /// Expected values from Pillow 13 (`Image.fromarray(a).resize((3, 2), Image.BILINEAR)` on
    /// the 7x5 ramp `a[y, x] = 9 * x + 40 * y`, every channel alike), written down before this
    /// code ran.
    #[test]
    fn a_ramp_shrinks_as_pillow_shrinks_it() {
        let src = gray(7, 5, |x, y| (9 * x + 40 * y) as u8);
        let out = resize_rgb8(&src, 7, 5, 3, 2);
        let got: Vec<u8> = out.chunks_exact(3).map(|p| p[0]).collect();
        assert_eq!(got, PILLOW_RAMP_7X5_TO_3X2);
    }

    /// Growing: the 3x2 ramp `a[y, x] = 100 * x + 50 * y` to 5x4, Pillow 13 as above.
    #[test]
    fn a_ramp_grows_as_pillow_grows_it() {
        let src = gray(3, 2, |x, y| (100 * x + 50 * y) as u8);
        let out = resize_rgb8(&src, 3, 2, 5, 4);
        let got: Vec<u8> = out.chunks_exact(3).map(|p| p[0]).collect();
        assert_eq!(got, PILLOW_RAMP_3X2_TO_5X4);
    }

    const PILLOW_RAMP_7X5_TO_3X2: [u8; 6] = [48, 67, 86, 128, 147, 166];
    const PILLOW_RAMP_3X2_TO_5X4: [u8; 20] =
        [0, 40, 100, 160, 200, 13, 53, 113, 173, 213, 38, 78, 138, 198, 238, 50, 90, 150, 210, 250];
}
