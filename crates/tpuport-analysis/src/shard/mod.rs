//! The sharding planner behind `tpuport shard`.

pub mod names;
