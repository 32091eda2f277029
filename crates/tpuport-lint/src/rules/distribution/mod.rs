//! TPU5xx: multi-device setup written for GPUs.

pub(crate) mod ddp_device_ids;
pub(crate) mod device_put_replicated;
pub(crate) mod experimental_shard_map;
pub(crate) mod master_addr_env;
pub(crate) mod mirrored_strategy;
pub(crate) mod multiprocessing_spawn;
pub(crate) mod pmap_usage;
pub(crate) mod shard_map_check_rep;
pub(crate) mod xla_backend_without_init_method;
