//! Index arithmetic shared by the evaluator: element counts, row-major strides, broadcasting,
//! and the flat source index of every element of a rearranged result.

/// Element count of a shape, `None` when it overflows `u64`.
#[must_use]
pub fn checked_elems(shape: &[u64]) -> Option<u64> {
    shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))
}

/// Element count as a `usize` when it is at most `max`.
pub(crate) fn elems_within(shape: &[u64], max: u64) -> Option<usize> {
    checked_elems(shape).filter(|&n| n <= max).and_then(|n| usize::try_from(n).ok())
}

/// Row-major strides (in elements) of `shape`.
#[must_use]
pub fn strides(shape: &[u64]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        let d = usize::try_from(shape[i + 1]).unwrap_or(usize::MAX);
        s[i] = s[i + 1].saturating_mul(d);
    }
    s
}

/// Numpy broadcast of two shapes (right-aligned; a dim of 1 stretches), `None` when they do not
/// broadcast.
#[must_use]
pub fn broadcast_shapes(a: &[u64], b: &[u64]) -> Option<Vec<u64>> {
    let r = a.len().max(b.len());
    let at = |s: &[u64], i: usize| if i + s.len() >= r { s[i + s.len() - r] } else { 1 };
    (0..r)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Some(x),
            (1, y) => Some(y),
            _ => None,
        })
        .collect()
}

/// Flat source index of every element of `out` (row-major), where output coordinate `c` along
/// axis `k` reads source coordinate `coord(k, c)`, and `src_strides` are the source's strides
/// per output axis. `None` when a coordinate is negative.
pub(crate) fn source_index(
    out: &[u64],
    src_strides: &[usize],
    coord: impl Fn(usize, u64) -> i64,
) -> Option<Vec<usize>> {
    let n = usize::try_from(checked_elems(out)?).ok()?;
    let mut idx = Vec::with_capacity(n);
    let mut pos = vec![0u64; out.len()];
    for _ in 0..n {
        let mut flat = 0usize;
        for (k, p) in pos.iter().enumerate() {
            let c = usize::try_from(coord(k, *p)).ok()?;
            flat = flat.checked_add(c.checked_mul(src_strides[k])?)?;
        }
        idx.push(flat);
        for k in (0..out.len()).rev() {
            pos[k] += 1;
            if pos[k] < out[k] {
                break;
            }
            pos[k] = 0;
        }
    }
    Some(idx)
}

/// Flat index into `from` of every element of `to` under numpy broadcasting (`from` must
/// broadcast to `to`).
pub(crate) fn broadcast_index(from: &[u64], to: &[u64]) -> Option<Vec<usize>> {
    let off = to.len().checked_sub(from.len())?;
    let st = strides(from);
    let mut src = vec![0usize; to.len()];
    for (k, &d) in from.iter().enumerate() {
        if d != 1 {
            if d != to[k + off] {
                return None;
            }
            src[k + off] = st[k];
        }
    }
    source_index(to, &src, |_, c| c.cast_signed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting() {
        assert_eq!(broadcast_shapes(&[3, 1], &[4]), Some(vec![3, 4]));
        assert_eq!(broadcast_shapes(&[2], &[3]), None);
        assert_eq!(broadcast_index(&[3, 1], &[3, 2]), Some(vec![0, 0, 1, 1, 2, 2]));
        assert_eq!(broadcast_index(&[2], &[2, 2]), Some(vec![0, 1, 0, 1]));
        assert_eq!(broadcast_index(&[3], &[2]), None);
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(checked_elems(&[u64::MAX, 2]), None);
    }
}
