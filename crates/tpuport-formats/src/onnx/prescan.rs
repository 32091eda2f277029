//! A count of the messages a file would decode into, read from the protobuf wire format
//! before decoding: an empty `NodeProto` takes two bytes in the file but a few hundred in
//! memory, so a hostile file of empty messages could otherwise need far more memory than its
//! size suggests. Nodes, attributes, tensors and value infos are counted through graphs,
//! subgraph attributes and functions, against `Limits::max_items`.

/// Which message a byte range holds.
#[derive(Clone, Copy)]
enum Kind {
    Model,
    Graph,
    Node,
    Attribute,
    Function,
}

fn varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Deepest message nesting walked (prost itself stops at 100).
const MAX_DEPTH: usize = 128;

/// Counts messages in a `ModelProto`; `Err` with the count limit when it is exceeded.
/// Malformed wire data ends the scan quietly: the decoder reports it properly.
pub(crate) fn check(bytes: &[u8], limit: u64) -> Result<(), u64> {
    let mut count = 0u64;
    scan(bytes, Kind::Model, 0, &mut count, limit)
}

fn scan(b: &[u8], kind: Kind, depth: usize, count: &mut u64, limit: u64) -> Result<(), u64> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let mut pos = 0usize;
    while pos < b.len() {
        let Some(key) = varint(b, &mut pos) else { return Ok(()) };
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => {
                if varint(b, &mut pos).is_none() {
                    return Ok(());
                }
            }
            1 => pos += 8,
            5 => pos += 4,
            2 => {
                let Some(len) = varint(b, &mut pos).and_then(|l| usize::try_from(l).ok()) else {
                    return Ok(());
                };
                let Some(sub) = pos.checked_add(len).and_then(|end| b.get(pos..end)) else {
                    return Ok(());
                };
                pos += len;
                let (counted, inner) = match (kind, field) {
                    (Kind::Model, 7) | (Kind::Attribute, 6 | 11) => (false, Some(Kind::Graph)),
                    (Kind::Model, 25) => (true, Some(Kind::Function)),
                    (Kind::Graph, 1) | (Kind::Function, 7) => (true, Some(Kind::Node)),
                    (Kind::Node, 5) | (Kind::Function, 11) => (true, Some(Kind::Attribute)),
                    (Kind::Graph, 5 | 11 | 12 | 13 | 15) | (Kind::Attribute, 10 | 23) => {
                        (true, None)
                    }
                    _ => (false, None),
                };
                if counted {
                    *count += 1;
                    if *count > limit {
                        return Err(limit);
                    }
                }
                if let Some(k) = inner {
                    scan(sub, k, depth + 1, count, limit)?;
                }
            }
            _ => return Ok(()),
        }
    }
    Ok(())
}
