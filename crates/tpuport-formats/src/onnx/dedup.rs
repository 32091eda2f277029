//! Groups of initializers holding the same data: byte-identical, or (2-D) one the transpose of
//! the other (the legacy torch exporter stores GPT-2's tied embedding `wte` and a transposed
//! copy for the `lm_head` MatMul).
//!
//! Cost: weights are bucketed by dtype and byte size; only pairs inside a bucket are looked
//! at. Same-shape pairs are compared by their first and last bytes, then by a hash computed
//! once per weight, then in full; transposed pairs by their first row, then in full.

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
    let mut hashes: HashMap<WeightId, Option<u64>> = HashMap::new();
    for ((dtype, _), members) in buckets {
        if members.len() < 2 {
            continue;
        }
        let width = dtype.bits().filter(|b| b % 8 == 0).map(|b| (b / 8) as usize);
        for i in 0..members.len() {
            for j in i + 1..members.len() {
                let (a, b) = (members[i], members[j]);
                let (wa, wb) = (model.weights.get(a), model.weights.get(b));
                let same = wa.shape == wb.shape
                    && ends_equal(model, a, b)
                    && hash_of(model, &mut hashes, a).is_some()
                    && hash_of(model, &mut hashes, a) == hash_of(model, &mut hashes, b)
                    && equal(model, a, b, None);
                let transposed = !same
                    && width.is_some()
                    && wa.shape.len() == 2
                    && wb.shape.len() == 2
                    && wa.shape[0] == wb.shape[1]
                    && wa.shape[1] == wb.shape[0]
                    && equal(model, a, b, width.map(|k| (k, true)))
                    && equal(model, a, b, width.map(|k| (k, false)));
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

fn ordered_hash(b: &[u8]) -> u64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15 ^ b.len() as u64;
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let mut a = [0u8; 8];
        a.copy_from_slice(c);
        h = mix(h ^ u64::from_le_bytes(a));
    }
    for &x in chunks.remainder() {
        h = mix(h ^ u64::from(x));
    }
    h
}

/// The ordered hash of a weight's bytes, computed once (`None` when unreadable).
fn hash_of(model: &Model, cache: &mut HashMap<WeightId, Option<u64>>, id: WeightId) -> Option<u64> {
    *cache.entry(id).or_insert_with(|| model.weights.get(id).bytes().ok().map(|b| ordered_hash(&b)))
}

/// Cheap pre-check: the first and last 64 bytes agree.
fn ends_equal(model: &Model, a: WeightId, b: WeightId) -> bool {
    let (Ok(x), Ok(y)) = (model.weights.get(a).bytes(), model.weights.get(b).bytes()) else {
        return false;
    };
    let k = x.len().min(64);
    x.len() == y.len() && x[..k] == y[..k] && x[x.len() - k..] == y[y.len() - k..]
}

/// Full comparison: exact when `transpose` is `None`; else `b` read as the transpose of `a`
/// with elements of the given width, only the first row when the flag is set (a cheap
/// rejection before the full pass).
fn equal(model: &Model, a: WeightId, b: WeightId, transpose: Option<(usize, bool)>) -> bool {
    let (wa, wb) = (model.weights.get(a), model.weights.get(b));
    let (Ok(x), Ok(y)) = (wa.bytes(), wb.bytes()) else { return false };
    let Some((k, first_row_only)) = transpose else { return x == y };
    let (Ok(rows), Ok(cols)) = (usize::try_from(wa.shape[0]), usize::try_from(wa.shape[1])) else {
        return false;
    };
    if x.len() != rows * cols * k || y.len() != x.len() {
        return false;
    }
    let rows_checked = if first_row_only { rows.min(1) } else { rows };
    for r in 0..rows_checked {
        let row = &x[r * cols * k..(r + 1) * cols * k];
        for (c, e) in row.chunks_exact(k).enumerate() {
            let j = (c * rows + r) * k;
            if e != &y[j..j + k] {
                return false;
            }
        }
    }
    true
}
