//! Groups of initializers holding the same data: byte-identical, or (2-D) one the transpose of
//! the other (the legacy torch exporter stores GPT-2's tied embedding `wte` and a transposed
//! copy for the `lm_head` MatMul).
//!
//! Cost: weights are bucketed by dtype and byte size first; only buckets with two or more
//! members are read. Each candidate is hashed once (an ordered hash for exact matches, an
//! order-independent hash of its elements for 2-D ones), and only equal hashes are compared
//! in full.

use std::collections::{BTreeMap, HashMap};

use tpuport_model::{DType, Graph, Model, ValueKind, WeightId};

/// Groups (each sorted, two or more members) of initializers with identical contents,
/// counting a 2-D initializer equal to another's transpose as identical. Weights that cannot
/// be read, and empty ones, are left out.
#[must_use]
pub fn duplicate_initializers(model: &Model) -> Vec<Vec<WeightId>> {
    let mut ids = Vec::new();
    collect(&model.graph, &mut ids);
    ids.sort_unstable();
    ids.dedup();
    let mut buckets: HashMap<(DType, u64), Vec<WeightId>> = HashMap::new();
    for id in ids {
        let w = model.weights.get(id);
        if w.nbytes() > 0 {
            buckets.entry((w.dtype, w.nbytes())).or_default().push(id);
        }
    }
    let mut parent: BTreeMap<WeightId, WeightId> = BTreeMap::new();
    for ((dtype, _), members) in buckets {
        if members.len() < 2 {
            continue;
        }
        let width = dtype.bits().filter(|b| b % 8 == 0).map(|b| (b / 8) as usize);
        let mut hashes = Vec::with_capacity(members.len());
        for &id in &members {
            let w = model.weights.get(id);
            let Ok(bytes) = w.bytes() else { continue };
            let two_d = w.shape.len() == 2;
            let bag = width.filter(|_| two_d).map(|k| bag_hash(&bytes, k));
            hashes.push((id, ordered_hash(&bytes), bag));
        }
        for i in 0..hashes.len() {
            for j in i + 1..hashes.len() {
                let ((a, ha, ba), (b, hb, bb)) = (hashes[i], hashes[j]);
                let (wa, wb) = (model.weights.get(a), model.weights.get(b));
                let same = ha == hb && wa.shape == wb.shape && equal(model, a, b, None);
                let transposed = !same
                    && ba.is_some()
                    && ba == bb
                    && wa.shape.len() == 2
                    && wa.shape[0] == wb.shape[1]
                    && wa.shape[1] == wb.shape[0]
                    && equal(model, a, b, width);
                if same || transposed {
                    union(&mut parent, a, b);
                }
            }
        }
    }
    let mut groups: BTreeMap<WeightId, Vec<WeightId>> = BTreeMap::new();
    let keys: Vec<WeightId> = parent.keys().copied().collect();
    for id in keys {
        let root = find(&mut parent, id);
        groups.entry(root).or_default().push(id);
    }
    let mut out: Vec<Vec<WeightId>> = groups.into_values().filter(|g| g.len() > 1).collect();
    for g in &mut out {
        g.sort_unstable();
    }
    out.sort();
    out
}

fn collect(g: &Graph, out: &mut Vec<WeightId>) {
    for v in &g.values {
        if let ValueKind::Weight(id) = v.kind {
            out.push(id);
        }
    }
    for n in &g.nodes {
        for (_, sg) in &n.subgraphs {
            collect(sg, out);
        }
    }
}

fn find(parent: &mut BTreeMap<WeightId, WeightId>, x: WeightId) -> WeightId {
    let mut r = x;
    while let Some(&p) = parent.get(&r) {
        if p == r {
            break;
        }
        r = p;
    }
    parent.insert(x, r);
    r
}

fn union(parent: &mut BTreeMap<WeightId, WeightId>, a: WeightId, b: WeightId) {
    parent.entry(a).or_insert(a);
    parent.entry(b).or_insert(b);
    let (ra, rb) = (find(parent, a), find(parent, b));
    let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
    parent.insert(hi, lo);
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn word(c: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a[..c.len()].copy_from_slice(c);
    u64::from_le_bytes(a)
}

fn ordered_hash(b: &[u8]) -> u64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15 ^ b.len() as u64;
    for c in b.chunks(8) {
        h = mix(h ^ word(c));
    }
    h
}

/// Order-independent hash of elements of `width` bytes: invariant under transposition.
fn bag_hash(b: &[u8], width: usize) -> u64 {
    b.chunks(width).fold(0u64, |acc, c| acc.wrapping_add(mix(word(c).wrapping_add(0x632b_e59b_d9b4_e019))))
}

/// Full comparison: exact, or `b` read as the transpose of `a` when `width` is given.
fn equal(model: &Model, a: WeightId, b: WeightId, width: Option<usize>) -> bool {
    let (wa, wb) = (model.weights.get(a), model.weights.get(b));
    let (Ok(x), Ok(y)) = (wa.bytes(), wb.bytes()) else { return false };
    let Some(k) = width else { return x == y };
    let (Ok(rows), Ok(cols)) = (usize::try_from(wa.shape[0]), usize::try_from(wa.shape[1])) else { return false };
    if x.len() != rows * cols * k || y.len() != x.len() {
        return false;
    }
    for r in 0..rows {
        for c in 0..cols {
            let (i, j) = ((r * cols + c) * k, (c * rows + r) * k);
            if x[i..i + k] != y[j..j + k] {
                return false;
            }
        }
    }
    true
}
