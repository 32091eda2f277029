//! Data movement, metadata and random bits (reshape, transpose, slice, concat, pad, gather,
//! constants, shapes, tuples, sharding annotations, `rng`): no FLOPs, operand and result
//! bytes only.
//!
//! Layout changes of weights (a transposed embedding reused as the LM head) are done once, not
//! per step (XLA's layout assignment and constant folding): an op whose operands are all
//! weights or values folded from weights moves no bytes, and its results count as folded.

use super::{OpClass, OpCost, Site, is_weight};

pub(super) fn cost(s: &mut Site<'_>, c: &mut OpCost) {
    c.class = OpClass::Data;
    let ins: Vec<_> = s.n.inputs.iter().flatten().copied().collect();
    if !ins.is_empty() && ins.iter().all(|v| is_weight(s.g, *v) || s.konst.contains(v)) {
        s.konst.extend(s.n.outputs.iter().copied());
        c.bytes = 0;
        s.folded = true;
    }
}
