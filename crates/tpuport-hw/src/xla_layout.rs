//! [`XlaLayout`]: a layout as the TPU compiler reports it (`{1,0,3,2:T(8,128)}`), and the
//! bytes an array takes under it.
//!
//! The text is XLA's layout notation: the dimension numbers from minor to major, then after `:`
//! the tiles, `T(8,128)(2,1)`. Only the first tile changes the size: the array is laid out in
//! major-to-minor order, its last dimensions (as many as the tile has; missing leading ones
//! count as 1, a scalar is `[1]`) are padded up to multiples of the tile, and the following
//! tiles (`(2,1)` packs bf16 pairs, `(4,1)` int8 quads) only reorder elements inside it.
//! Other attributes (`S(n)` memory space, `E(n)` element size, …) are read past.
//!
//! Checked against libtpu 0.0.52's argument sizes for 19 shapes on v5e and v6e
//! (`tests/data/libtpu_layouts.json`): the compiler picks the dimension order itself, so a
//! f32[512,512,3,3] kernel becomes `{1,0,3,2:T(8,128)}` (3x3 major, 512x512 tiled: no
//! padding), not the logical order that would pad 3 to 8 and 3 to 128.

use tpuport_model::DType;

use crate::error::HwError;

/// A parsed XLA layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XlaLayout {
    /// Dimension numbers, minor to major.
    pub minor_to_major: Vec<usize>,
    /// Tiles in order; the first one sets the padding.
    pub tiles: Vec<Vec<u64>>,
}

impl XlaLayout {
    /// Parses `{1,0:T(8,128)(2,1)}`, `{0:T(1024)}`, `{:T(128)}` or `{1,0}`.
    ///
    /// # Errors
    /// [`HwError::Layout`] naming the text and what is wrong.
    pub fn parse(text: &str) -> Result<XlaLayout, HwError> {
        let fail = |why: &str| HwError::Layout { text: text.to_owned(), reason: why.to_owned() };
        let inner = text
            .trim()
            .strip_prefix('{')
            .and_then(|s| s.strip_suffix('}'))
            .ok_or_else(|| fail("expected `{...}`"))?;
        let (dims, rest) = inner.split_once(':').unwrap_or((inner, ""));
        let minor_to_major = if dims.trim().is_empty() {
            Vec::new()
        } else {
            dims.split(',')
                .map(|d| d.trim().parse::<usize>().map_err(|_| fail("bad dimension number")))
                .collect::<Result<Vec<_>, _>>()?
        };
        let mut tiles = Vec::new();
        let mut s = rest.trim();
        while !s.is_empty() {
            let letter = s.chars().next().ok_or_else(|| fail("truncated"))?;
            s = &s[letter.len_utf8()..];
            // `T` opens a run of `(..)` groups; other attributes have one group each.
            while let Some(body) = s.strip_prefix('(') {
                let (group, after) = body.split_once(')').ok_or_else(|| fail("unclosed `(`"))?;
                if letter == 'T' {
                    let tile = group
                        .split(',')
                        .map(|x| x.trim().parse::<u64>().map_err(|_| fail("unsupported tile")))
                        .collect::<Result<Vec<_>, _>>()?;
                    if tile.contains(&0) {
                        return Err(fail("zero tile dimension"));
                    }
                    tiles.push(tile);
                }
                s = after;
                if letter != 'T' {
                    break;
                }
            }
            s = s.trim_start();
        }
        Ok(XlaLayout { minor_to_major, tiles })
    }

    /// The array of `dims` in this layout's physical (major-to-minor) order, its trailing
    /// dimensions padded to the first tile; `None` when the layout does not match the rank.
    #[must_use]
    pub fn padded_dims(&self, dims: &[u64]) -> Option<Vec<u64>> {
        if self.minor_to_major.len() != dims.len() {
            return None;
        }
        let mut physical: Vec<u64> = Vec::with_capacity(dims.len().max(1));
        for &d in self.minor_to_major.iter().rev() {
            physical.push(*dims.get(d)?);
        }
        if let Some(tile) = self.tiles.first() {
            while physical.len() < tile.len() {
                physical.insert(0, 1);
            }
            let n = physical.len();
            for (k, &t) in tile.iter().enumerate() {
                let i = n - tile.len() + k;
                physical[i] = physical[i].checked_next_multiple_of(t)?;
            }
        }
        Some(physical)
    }

    /// Bytes an array of `dims` and `dtype` takes in this layout; `None` when the layout does
    /// not match the rank or the dtype has no fixed width.
    #[must_use]
    pub fn device_bytes(&self, dims: &[u64], dtype: DType) -> Option<u64> {
        let bits = u64::from(dtype.bits()?);
        let physical = self.padded_dims(dims)?;
        let elements = physical.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))?;
        elements.checked_mul(bits).map(|b| b.div_ceil(8))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_libtpu_prints() {
        let l = XlaLayout::parse("{1,0,3,2:T(8,128)}").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(l.minor_to_major, vec![1, 0, 3, 2]);
        assert_eq!(l.tiles, vec![vec![8, 128]]);
        let l = XlaLayout::parse("{0:T(512)(128)(4,1)}").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(l.tiles, vec![vec![512], vec![128], vec![4, 1]]);
        let l = XlaLayout::parse("{:T(128)}").unwrap_or_else(|e| panic!("{e}"));
        assert!(l.minor_to_major.is_empty());
        let l = XlaLayout::parse("{1,0:T(8,128)S(1)}").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(l.tiles, vec![vec![8, 128]]);
        assert_eq!(XlaLayout::parse("{1,0}").map(|l| l.tiles.len()).ok(), Some(0));
    }

    #[test]
    fn bad_text_is_an_error() {
        for bad in ["1,0", "{a,b}", "{1,0:T(8,}", "{0:T(0)}", "{0:T(*)}"] {
            let e = XlaLayout::parse(bad).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn sizes_follow_the_first_tile() {
        let bytes = |l: &str, d: &[u64], t: DType| {
            XlaLayout::parse(l).ok().and_then(|x| x.device_bytes(d, t))
        };
        assert_eq!(bytes("{1,0,3,2:T(8,128)}", &[64, 64, 3, 3], DType::F32), Some(294_912));
        assert_eq!(bytes("{0,1:T(4,128)}", &[1000, 3], DType::F32), Some(16_384));
        assert_eq!(bytes("{:T(128)}", &[], DType::F32), Some(512));
        assert_eq!(bytes("{1,0:T(8,128)(4,1)}", &[33, 65], DType::I8), Some(5120));
        assert_eq!(bytes("{1,0}", &[3, 5], DType::F32), Some(60));
        assert_eq!(bytes("{1,0:T(8,128)}", &[3], DType::F32), None, "rank mismatch");
    }
}
