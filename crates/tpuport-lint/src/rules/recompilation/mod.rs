//! TPU1xx: shapes that change between steps, so XLA compiles the step again.

pub(crate) mod boolean_mask_index;
pub(crate) mod dataloader_without_drop_last;
pub(crate) mod distributed_sampler_without_drop_last;
pub(crate) mod dynamic_padding;
pub(crate) mod make_csv_dataset_partial_batch;
pub(crate) mod masked_select_call;
pub(crate) mod nonzero_call;
pub(crate) mod tensor_control_flow;
pub(crate) mod tf_batch_without_drop_remainder;
pub(crate) mod unique_without_size;
