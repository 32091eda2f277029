//! [`Sharding`]: a compiler-reported `xla.OpSharding`, decoded from the bytes the Shardings
//! extension returns and printed in XLA's HLO sharding notation
//! (`{devices=[1,8]<=[8]}`, `{replicated}`).
//!
//! Only the fields tpuport reads are declared (a hand-written prost subset, field numbers from
//! XLA's `xla_data.proto`); unknown fields are skipped by the decoder.

use prost::Message;
use serde::Serialize;

/// `xla.OpSharding.Type`.
const REPLICATED: i32 = 0;
const MAXIMAL: i32 = 1;
const TUPLE: i32 = 2;
const OTHER: i32 = 3;
const MANUAL: i32 = 4;
const UNREDUCED: i32 = 6;

/// `xla.OpSharding` (subset).
#[derive(Clone, PartialEq, Message)]
pub(crate) struct OpShardingProto {
    /// Field 1.
    #[prost(int32, tag = "1")]
    pub(crate) kind: i32,
    /// Field 3.
    #[prost(int64, repeated, tag = "3")]
    pub(crate) tile_assignment_dimensions: Vec<i64>,
    /// Field 4.
    #[prost(int64, repeated, tag = "4")]
    pub(crate) tile_assignment_devices: Vec<i64>,
    /// Field 5.
    #[prost(message, repeated, tag = "5")]
    pub(crate) tuple_shardings: Vec<OpShardingProto>,
    /// Field 6.
    #[prost(bool, tag = "6")]
    pub(crate) replicate_on_last_tile_dim: bool,
    /// Field 8.
    #[prost(int32, repeated, tag = "8")]
    pub(crate) last_tile_dims: Vec<i32>,
    /// Field 9.
    #[prost(int64, repeated, tag = "9")]
    pub(crate) iota_reshape_dims: Vec<i64>,
    /// Field 10.
    #[prost(int32, repeated, tag = "10")]
    pub(crate) iota_transpose_perm: Vec<i32>,
}

/// How the compiler distributes one parameter or output over the devices.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Sharding {
    /// XLA's notation: `{replicated}`, `{maximal device=0}`, `{devices=[1,8]<=[8]}`, …
    pub hlo: String,
    /// Number of shards along each array dimension (empty when not tiled: replicated,
    /// maximal, manual or a tuple).
    pub tiles: Vec<u64>,
    /// Copies of each shard (the trailing replication dimension of a partially replicated
    /// tiling); 1 when every shard is distinct.
    pub replicas: u64,
}

impl Sharding {
    /// Decodes serialized `xla.OpSharding` bytes.
    ///
    /// # Errors
    /// A message when the bytes are not an `OpSharding`.
    pub fn decode(bytes: &[u8]) -> Result<Sharding, String> {
        let p = OpShardingProto::decode(bytes).map_err(|e| e.to_string())?;
        Ok(Sharding::from_proto(&p))
    }

    pub(crate) fn from_proto(p: &OpShardingProto) -> Sharding {
        let dims: Vec<u64> =
            p.tile_assignment_dimensions.iter().map(|&d| u64::try_from(d).unwrap_or(0)).collect();
        let (tiles, replicas) = if p.kind == OTHER {
            let extra = usize::from(p.replicate_on_last_tile_dim) + p.last_tile_dims.len();
            let keep = dims.len().saturating_sub(extra);
            let replicas =
                if p.replicate_on_last_tile_dim { dims.get(keep).copied().unwrap_or(1) } else { 1 };
            (dims[..keep].to_vec(), replicas)
        } else {
            (Vec::new(), 1)
        };
        Sharding { hlo: render(p), tiles, replicas }
    }

    /// True when every device holds the whole array.
    #[must_use]
    pub fn is_replicated(&self) -> bool {
        self.tiles.iter().all(|&t| t <= 1)
    }
}

fn list<T: ToString>(v: &[T]) -> String {
    v.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}

/// XLA's textual form of a sharding.
fn render(p: &OpShardingProto) -> String {
    match p.kind {
        REPLICATED => "{replicated}".to_owned(),
        MANUAL => "{manual}".to_owned(),
        UNREDUCED => "{unreduced}".to_owned(),
        MAXIMAL => {
            let d = p.tile_assignment_devices.first().copied().unwrap_or(0);
            format!("{{maximal device={d}}}")
        }
        TUPLE => {
            let parts: Vec<String> = p.tuple_shardings.iter().map(render).collect();
            format!("{{{}}}", parts.join(", "))
        }
        OTHER => {
            let mut s = format!("{{devices=[{}]", list(&p.tile_assignment_dimensions));
            if p.iota_reshape_dims.is_empty() {
                s.push_str(&list(&p.tile_assignment_devices));
            } else {
                s.push_str(&format!("<=[{}]", list(&p.iota_reshape_dims)));
                let identity = p
                    .iota_transpose_perm
                    .iter()
                    .enumerate()
                    .all(|(i, &v)| usize::try_from(v).is_ok_and(|v| v == i));
                if !identity {
                    s.push_str(&format!("T({})", list(&p.iota_transpose_perm)));
                }
            }
            if p.replicate_on_last_tile_dim {
                s.push_str(" last_tile_dim_replicate");
            }
            if !p.last_tile_dims.is_empty() {
                let names: Vec<&str> = p
                    .last_tile_dims
                    .iter()
                    .map(|t| match *t {
                        REPLICATED => "replicated",
                        MANUAL => "manual",
                        UNREDUCED => "unreduced",
                        _ => "other",
                    })
                    .collect();
                s.push_str(&format!(" last_tile_dims={{{}}}", names.join(", ")));
            }
            s.push('}');
            s
        }
        k => format!("{{unknown sharding type {k}}}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(p: &OpShardingProto) -> Vec<u8> {
        p.encode_to_vec()
    }

    #[test]
    fn replicated_and_iota_tiles() {
        let r = OpShardingProto { kind: REPLICATED, ..OpShardingProto::default() };
        let s = Sharding::decode(&enc(&r)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.hlo, "{replicated}");
        assert!(s.is_replicated());
        let t = OpShardingProto {
            kind: OTHER,
            tile_assignment_dimensions: vec![1, 8],
            iota_reshape_dims: vec![8],
            iota_transpose_perm: vec![0],
            ..OpShardingProto::default()
        };
        let s = Sharding::decode(&enc(&t)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.hlo, "{devices=[1,8]<=[8]}");
        assert_eq!((s.tiles.clone(), s.replicas), (vec![1, 8], 1));
        assert!(!s.is_replicated());
    }

    #[test]
    fn transposed_iota_is_printed() {
        let t = OpShardingProto {
            kind: OTHER,
            tile_assignment_dimensions: vec![4, 2],
            iota_reshape_dims: vec![2, 4],
            iota_transpose_perm: vec![1, 0],
            ..OpShardingProto::default()
        };
        let s = Sharding::decode(&enc(&t)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.hlo, "{devices=[4,2]<=[2,4]T(1,0)}");
    }

    #[test]
    fn partial_replication_and_explicit_devices() {
        let t = OpShardingProto {
            kind: OTHER,
            tile_assignment_dimensions: vec![2, 1, 4],
            tile_assignment_devices: (0..8).collect(),
            replicate_on_last_tile_dim: true,
            ..OpShardingProto::default()
        };
        let s = Sharding::decode(&enc(&t)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.hlo, "{devices=[2,1,4]0,1,2,3,4,5,6,7 last_tile_dim_replicate}");
        assert_eq!((s.tiles, s.replicas), (vec![2, 1], 4));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(Sharding::decode(&[0xff, 0xff, 0xff]).is_err());
    }
}
