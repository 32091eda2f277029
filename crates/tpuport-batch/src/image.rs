//! Image rows: a JPEG or PNG file decoded to RGB, resized to the model's size (bilinear, the
//! whole image, no crop, Pillow's arithmetic: [`crate::resample`]), scaled to `[0, 1]`,
//! normalised per channel by `(x - mean) / std`, and laid out as NCHW or NHWC `f32`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use tpuport_exec::config::ImageLayout;

use crate::resample;

/// Channel order of an image row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Channels first: `[3, H, W]`.
    Nchw,
    /// Channels last: `[H, W, 3]`.
    Nhwc,
}

/// How an image becomes a row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ImageSpec {
    /// Height and width after resizing.
    pub height: u32,
    /// Width after resizing.
    pub width: u32,
    /// Per-channel mean (R, G, B), subtracted after scaling to `[0, 1]`.
    pub mean: [f32; 3],
    /// Per-channel standard deviation (R, G, B), divided by after the mean.
    pub std: [f32; 3],
    /// Layout.
    pub layout: Layout,
}

/// What the user asked for; unset fields come from the model's input shape.
#[derive(Clone, Debug, Default)]
pub struct ImageOptions {
    /// Height and width (default: from the model's input).
    pub size: Option<(u32, u32)>,
    /// Mean (default 0).
    pub mean: Option<[f32; 3]>,
    /// Standard deviation (default 1).
    pub std: Option<[f32; 3]>,
    /// Layout (default: `[3, H, W]` is NCHW, `[H, W, 3]` NHWC).
    pub layout: Option<Layout>,
}

/// The `[image]` table of a model-repository entry's `config.toml`.
#[derive(Clone, Debug)]
pub struct ConfigImage {
    /// The `config.toml`, for messages.
    pub file: PathBuf,
    /// Its values (checked when the file was read: three finite means, non-zero stds).
    pub values: ImageOptions,
}

impl ConfigImage {
    /// The `[image]` table of `model` when it is a model-repository entry (a folder with
    /// `config.toml`) that has one.
    ///
    /// # Errors
    /// The config cannot be read or is invalid (the message names the file and the field).
    pub fn of_model(model: &Path) -> Result<Option<ConfigImage>, tpuport_exec::ExecError> {
        let Some((config, file)) = tpuport_exec::ModelConfig::of_entry(model)? else {
            return Ok(None);
        };
        let Some(c) = config.image else { return Ok(None) };
        let layout = c.layout.map(|l| match l {
            ImageLayout::Nchw => Layout::Nchw,
            ImageLayout::Nhwc => Layout::Nhwc,
        });
        let values = ImageOptions { size: c.size, mean: c.mean, std: c.std, layout };
        Ok(Some(ConfigImage { file, values }))
    }
}

/// Largest pixel count of a source image: a hostile header is refused before the pixels are
/// allocated (4 bytes a pixel at most are allocated).
const MAX_PIXELS: u64 = 1 << 27;

/// Bytes at the end of a JPEG searched for its end-of-image marker (trailing data after the
/// marker is tolerated up to this much).
const JPEG_TAIL: usize = 4096;

impl ImageSpec {
    /// The spec for a model input of `row_shape` (`f32`), with the user's overrides.
    ///
    /// # Errors
    /// A row shape that is not an image (`[3, H, W]` or `[H, W, 3]`), or overrides that
    /// disagree with it (the message says which).
    pub fn for_input(row_shape: &[u64], o: &ImageOptions) -> Result<ImageSpec, String> {
        ImageSpec::resolve(row_shape, o, None)
    }

    /// [`ImageSpec::for_input`] with the `[image]` table of the model's `config.toml` under
    /// the flags: each flag given overrides its field, a field given by neither takes the
    /// default. A message about a value from the config names the file and the field.
    ///
    /// # Errors
    /// As [`ImageSpec::for_input`].
    pub fn resolve(
        row_shape: &[u64],
        flags: &ImageOptions,
        config: Option<&ConfigImage>,
    ) -> Result<ImageSpec, String> {
        let cfg = config.map(|c| &c.values);
        // Where a value came from, for messages: the flag, else `FILE: image.FIELD`.
        let from = |flag: &str, field: &str, by_flag: bool| match config {
            Some(c) if !by_flag => format!("{}: image.{field}", c.file.display()),
            _ => flag.to_owned(),
        };
        let size = flags.size.or(cfg.and_then(|c| c.size));
        let layout_given = flags.layout.or(cfg.and_then(|c| c.layout));
        let guessed = match row_shape {
            [3, h, w] => Some((Layout::Nchw, *h, *w)),
            [h, w, 3] => Some((Layout::Nhwc, *h, *w)),
            _ => None,
        };
        let layout = layout_given.or(guessed.map(|g| g.0)).ok_or_else(|| {
            format!("the model's input row {row_shape:?} is not an image ([3, H, W] or [H, W, 3])")
        })?;
        let (h, w) = match (layout, row_shape) {
            (Layout::Nchw, [3, h, w]) | (Layout::Nhwc, [h, w, 3]) => (*h, *w),
            _ => {
                return Err(format!(
                    "{} {layout:?} does not fit the model's input row {row_shape:?}",
                    from("--layout", "layout", flags.layout.is_some())
                ));
            }
        };
        let (h, w) = (
            u32::try_from(h).map_err(|_| "image height too large".to_owned())?,
            u32::try_from(w).map_err(|_| "image width too large".to_owned())?,
        );
        if h == 0 || w == 0 || h > MAX_SIDE || w > MAX_SIDE {
            return Err(format!(
                "the model's input row {row_shape:?} asks for {h}x{w} images; each side must be 1 to {MAX_SIDE}"
            ));
        }
        if let Some(size) = size
            && size != (h, w)
        {
            return Err(format!(
                "{} {}x{} differs from the model's input {h}x{w}",
                from("--image-size", "size", flags.size.is_some()),
                size.0,
                size.1
            ));
        }
        let mean = flags.mean.or(cfg.and_then(|c| c.mean)).unwrap_or([0.0; 3]);
        if mean.iter().any(|m| !m.is_finite()) {
            let at = from("--mean", "mean", flags.mean.is_some());
            return Err(format!("{at}: every value must be finite"));
        }
        let std = flags.std.or(cfg.and_then(|c| c.std)).unwrap_or([1.0; 3]);
        if std.iter().any(|s| !s.is_finite() || *s == 0.0) {
            let at = from("--std", "std", flags.std.is_some());
            return Err(format!("{at}: every value must be finite and non-zero"));
        }
        Ok(ImageSpec { height: h, width: w, mean, std, layout })
    }

    /// Bytes of one row (`f32`).
    #[must_use]
    pub fn row_bytes(&self) -> usize {
        3 * self.height as usize * self.width as usize * 4
    }

    /// Decodes the image at `path` into `out` (appending [`ImageSpec::row_bytes`] bytes).
    ///
    /// # Errors
    /// The reason, one line (unreadable file, unknown or corrupt format, too many pixels).
    pub fn decode_into(&self, path: &Path, out: &mut Vec<u8>) -> Result<(), String> {
        let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
        self.decode_bytes_into(&bytes, out)
    }

    /// [`ImageSpec::decode_into`] from the file's bytes.
    ///
    /// # Errors
    /// As [`ImageSpec::decode_into`].
    pub fn decode_bytes_into(&self, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let mut reader = image::ImageReader::new(std::io::Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|e| e.to_string())?;
        match reader.format() {
            None => return Err("not a JPEG or PNG image".to_owned()),
            // The JPEG decoder fills a truncated scan with grey instead of failing; the end
            // marker (FF D9, which cannot occur inside entropy-coded data) must be near the end.
            Some(image::ImageFormat::Jpeg) => {
                let tail = &bytes[bytes.len().saturating_sub(JPEG_TAIL)..];
                if !tail.windows(2).any(|w| w == [0xFF, 0xD9]) {
                    return Err("truncated JPEG: no end-of-image marker".to_owned());
                }
            }
            Some(_) => {}
        }
        reader.limits(limits_for());
        if self.width == 0 || self.height == 0 {
            return Err(format!("cannot resize to {}x{}", self.height, self.width));
        }
        let img = reader.decode().map_err(|e| e.to_string())?.into_rgb8();
        let (w, h) = (self.width as usize, self.height as usize);
        let (iw, ih) = img.dimensions();
        let resized;
        let px: &[u8] = if (iw, ih) == (self.width, self.height) {
            img.as_raw()
        } else {
            resized = resample::resize_rgb8(img.as_raw(), iw as usize, ih as usize, w, h);
            &resized
        };
        // Every channel value maps through a table: 256 normalised values per channel.
        let table: Vec<[u8; 4]> = (0..3)
            .flat_map(|c| {
                (0..=255u8).map(move |p| {
                    ((f32::from(p) / 255.0 - self.mean[c]) / self.std[c]).to_le_bytes()
                })
            })
            .collect();
        let start = out.len();
        out.resize(start + self.row_bytes(), 0);
        let row = &mut out[start..];
        match self.layout {
            Layout::Nchw => {
                for (c, plane) in row.chunks_exact_mut(h * w * 4).enumerate() {
                    for (dst, p) in plane.chunks_exact_mut(4).zip(px.iter().skip(c).step_by(3)) {
                        dst.copy_from_slice(&table[c * 256 + usize::from(*p)]);
                    }
                }
            }
            Layout::Nhwc => {
                for (i, (dst, p)) in row.chunks_exact_mut(4).zip(px).enumerate() {
                    dst.copy_from_slice(&table[(i % 3) * 256 + usize::from(*p)]);
                }
            }
        }
        Ok(())
    }
}

/// The longest image side decoded or produced.
const MAX_SIDE: u32 = 1 << 15;

fn limits_for() -> image::Limits {
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_PIXELS * 4);
    limits
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn png(w: u32, h: u32, f: impl Fn(u32, u32) -> [u8; 3]) -> Vec<u8> {
        let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb(f(x, y)));
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    fn floats(b: &[u8]) -> Vec<f32> {
        b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    }

    #[test]
    fn spec_follows_the_model_shape() {
        let s = ImageSpec::for_input(&[3, 224, 224], &ImageOptions::default()).unwrap();
        assert_eq!((s.layout, s.height, s.width), (Layout::Nchw, 224, 224));
        let s = ImageSpec::for_input(&[32, 48, 3], &ImageOptions::default()).unwrap();
        assert_eq!((s.layout, s.height, s.width), (Layout::Nhwc, 32, 48));
        assert!(ImageSpec::for_input(&[784], &ImageOptions::default()).is_err());
        let o = ImageOptions { size: Some((100, 100)), ..Default::default() };
        let e = ImageSpec::for_input(&[3, 224, 224], &o).unwrap_err();
        assert!(e.contains("224x224"), "{e}");
        let o = ImageOptions { std: Some([1.0, 0.0, 1.0]), ..Default::default() };
        assert!(ImageSpec::for_input(&[3, 8, 8], &o).is_err());
        // A model whose image is empty or larger than any decoded image is refused up front.
        for shape in [[3, 0, 224], [3, 224, 0], [3, 1 << 16, 224]] {
            let e = ImageSpec::for_input(&shape, &ImageOptions::default()).unwrap_err();
            assert!(e.contains("each side must be 1 to 32768"), "{e}");
        }
        let s = ImageSpec {
            height: 0,
            ..ImageSpec::for_input(&[3, 8, 8], &ImageOptions::default()).unwrap()
        };
        assert!(s.decode_bytes_into(&png(4, 4, |_, _| [1, 2, 3]), &mut Vec::new()).is_err());
    }

    #[test]
    fn flags_override_the_config_field_by_field() {
        let cfg = ConfigImage {
            file: PathBuf::from("repo/m/config.toml"),
            values: ImageOptions {
                size: Some((8, 8)),
                mean: Some([0.5; 3]),
                std: Some([0.25; 3]),
                layout: Some(Layout::Nchw),
            },
        };
        let s = ImageSpec::resolve(&[3, 8, 8], &ImageOptions::default(), Some(&cfg)).unwrap();
        assert_eq!((s.mean, s.std, s.layout), ([0.5; 3], [0.25; 3], Layout::Nchw));
        let flags = ImageOptions { mean: Some([0.1, 0.2, 0.3]), ..Default::default() };
        let s = ImageSpec::resolve(&[3, 8, 8], &flags, Some(&cfg)).unwrap();
        assert_eq!((s.mean, s.std), ([0.1, 0.2, 0.3], [0.25; 3]));
        // A config value that does not fit the model names the file and the field; the same
        // value given as a flag names the flag.
        let e = ImageSpec::resolve(&[3, 16, 16], &ImageOptions::default(), Some(&cfg)).unwrap_err();
        assert!(e.starts_with("repo/m/config.toml: image.size 8x8 differs"), "{e}");
        let flags = ImageOptions { size: Some((8, 8)), ..Default::default() };
        let e = ImageSpec::resolve(&[3, 16, 16], &flags, Some(&cfg)).unwrap_err();
        assert!(e.starts_with("--image-size 8x8 differs"), "{e}");
        let e = ImageSpec::resolve(&[8, 8, 3], &ImageOptions::default(), Some(&cfg)).unwrap_err();
        assert!(e.contains("config.toml: image.layout Nchw does not fit"), "{e}");
        let flags = ImageOptions { layout: Some(Layout::Nhwc), size: None, ..Default::default() };
        let cfg = ConfigImage { values: ImageOptions { size: None, ..cfg.values }, ..cfg };
        assert!(ImageSpec::resolve(&[8, 8, 3], &flags, Some(&cfg)).is_ok());
    }

    #[test]
    fn normalises_and_lays_out_exactly() {
        // A 2x2 PNG at the model's size: no resampling, so every value is known.
        let bytes = png(2, 2, |x, y| [(10 * x + 100 * y) as u8, 255, 0]);
        let o = ImageOptions {
            mean: Some([0.5, 0.5, 0.5]),
            std: Some([0.5, 0.25, 1.0]),
            ..Default::default()
        };
        let nchw = ImageSpec::for_input(&[3, 2, 2], &o).unwrap();
        let mut out = Vec::new();
        nchw.decode_bytes_into(&bytes, &mut out).unwrap();
        let v = floats(&out);
        let r = |p: f32| (p / 255.0 - 0.5) / 0.5;
        assert_eq!(&v[..4], &[r(0.0), r(10.0), r(100.0), r(110.0)]);
        assert_eq!(&v[4..8], &[2.0; 4]);
        assert_eq!(&v[8..], &[-0.5; 4]);
        let nhwc = ImageSpec::for_input(&[2, 2, 3], &o).unwrap();
        let mut out = Vec::new();
        nhwc.decode_bytes_into(&bytes, &mut out).unwrap();
        let v = floats(&out);
        assert_eq!(&v[..3], &[r(0.0), 2.0, -0.5]);
        assert_eq!(&v[9..], &[r(110.0), 2.0, -0.5]);
    }

    #[test]
    fn resizes_and_refuses_corrupt_files() {
        let bytes = png(64, 48, |_, _| [255, 0, 0]);
        let s = ImageSpec::for_input(&[3, 8, 8], &ImageOptions::default()).unwrap();
        let mut out = Vec::new();
        s.decode_bytes_into(&bytes, &mut out).unwrap();
        let v = floats(&out);
        assert_eq!(v.len(), 3 * 64);
        assert!(v[..64].iter().all(|x| (*x - 1.0).abs() < 1e-6));
        assert!(v[64..].iter().all(|x| x.abs() < 1e-6));
        let mut out = Vec::new();
        assert!(s.decode_bytes_into(&bytes[..bytes.len() / 2], &mut out).is_err());
        assert!(s.decode_bytes_into(b"not an image at all", &mut out).is_err());
        let img = image::RgbImage::from_fn(300, 300, |x, y| {
            image::Rgb([(x ^ y) as u8, x as u8, y as u8])
        });
        let mut jpeg = std::io::Cursor::new(Vec::new());
        img.write_to(&mut jpeg, image::ImageFormat::Jpeg).unwrap();
        let jpeg = jpeg.into_inner();
        s.decode_bytes_into(&jpeg, &mut out).unwrap();
        let e = s.decode_bytes_into(&jpeg[..jpeg.len() / 2], &mut out).unwrap_err();
        assert!(e.contains("truncated"), "{e}");
    }
}
