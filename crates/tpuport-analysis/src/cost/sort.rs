//! Sort and top-k: `n · ⌈log₂ n⌉` comparisons over the input's `n` elements (a comparison
//! sort's count; XLA's TPU sort is a bitonic network of the same order).

use super::{OpClass, OpCost, Site};

pub(super) fn cost(s: &Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Reduction;
    if let Some(i) = s.in_elems(0) {
        let lg = 64 - u64::from(i.max(2).leading_zeros());
        c.flops = i.saturating_mul(lg);
    }
}
