//! Time intervals `[start, end)` in the trace's microseconds: sorted disjoint unions, the length
//! one covers of a window, and what is left of an interval once a union is taken out.

/// Sorted disjoint union of intervals.
pub(crate) fn union(mut v: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    v.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Length of `[lo, hi)` covered by sorted disjoint intervals.
pub(crate) fn overlap(iv: &[(f64, f64)], lo: f64, hi: f64) -> f64 {
    let start = iv.partition_point(|x| x.1 <= lo);
    iv[start..].iter().take_while(|x| x.0 < hi).map(|x| (x.1.min(hi) - x.0.max(lo)).max(0.0)).sum()
}

/// The parts of `[lo, hi)` that sorted disjoint intervals do not cover, appended to `out`.
pub(crate) fn subtract(lo: f64, hi: f64, iv: &[(f64, f64)], out: &mut Vec<(f64, f64)>) {
    let mut cur = lo;
    let start = iv.partition_point(|x| x.1 <= lo);
    for &(a, b) in iv[start..].iter().take_while(|x| x.0 < hi) {
        if a > cur {
            out.push((cur, a));
        }
        cur = cur.max(b);
    }
    if cur < hi {
        out.push((cur, hi));
    }
}

/// Appends `[a, b)` to a list kept for a later [`union`], extending the last entry instead when
/// the two overlap (events of one timeline mostly come in time order, so the list stays near
/// the size of its union). At `cap` entries the list is merged in place; when that does not
/// free room the interval is dropped and `false` returned.
pub(crate) fn push_merged(v: &mut Vec<(f64, f64)>, a: f64, b: f64, cap: usize) -> bool {
    if let Some(last) = v.last_mut()
        && a >= last.0
        && a <= last.1
    {
        last.1 = last.1.max(b);
        return true;
    }
    if v.len() >= cap {
        *v = union(std::mem::take(v));
        if v.len() >= cap {
            return false;
        }
    }
    v.push((a, b));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unions_overlaps_and_differences() {
        let u = union(vec![(5.0, 7.0), (1.0, 3.0), (2.0, 4.0)]);
        assert_eq!(u, vec![(1.0, 4.0), (5.0, 7.0)]);
        assert_eq!(overlap(&u, 3.0, 6.0), 2.0);
        let mut left = Vec::new();
        subtract(0.0, 10.0, &u, &mut left);
        assert_eq!(left, vec![(0.0, 1.0), (4.0, 5.0), (7.0, 10.0)]);
        left.clear();
        subtract(2.0, 3.0, &u, &mut left);
        assert!(left.is_empty());
        let mut v = Vec::new();
        assert!(push_merged(&mut v, 1.0, 2.0, 2));
        assert!(push_merged(&mut v, 1.5, 3.0, 2));
        assert!(push_merged(&mut v, 5.0, 6.0, 2));
        assert_eq!(v, vec![(1.0, 3.0), (5.0, 6.0)]);
        assert!(!push_merged(&mut v, 8.0, 9.0, 2), "full and nothing to merge");
        assert!(push_merged(&mut v, 5.5, 7.0, 2), "extends the last entry");
        assert_eq!(v, vec![(1.0, 3.0), (5.0, 7.0)]);
    }
}
