//! Which rules look at which node (the dispatch table, in ruff's manner).

use tpuport_python::ast::{Expr, ExprKind, Stmt};

use crate::checker::Checker;
use crate::rules::{
    checkpointing, cuda, distribution, host_sync, input_pipeline, jax, precision, recompilation,
};

/// Rules that look at statements.
pub(crate) fn statement(checker: &mut Checker, stmt: &Stmt) {
    recompilation::tensor_control_flow::check(checker, stmt);
    cuda::cudnn_flag::check(checker, stmt);
    cuda::cuda_visible_devices::check(checker, stmt);
    precision::xla_use_bf16_env::check(checker, stmt);
    precision::jax_enable_x64::check_env(checker, stmt);
    distribution::master_addr_env::check(checker, stmt);
    input_pipeline::dataloader_without_device_loader::check(checker, stmt);
    jax::missing_donate_argnums::check(checker, stmt);
    precision::grad_scaler::check_stmt(checker, stmt);
    distribution::experimental_shard_map::check_stmt(checker, stmt);
}

/// Rules that look at expressions.
pub(crate) fn expression(checker: &mut Checker, expr: &Expr) {
    match &expr.kind {
        ExprKind::Call(call) => {
            recompilation::dataloader_without_drop_last::check(checker, call);
            recompilation::distributed_sampler_without_drop_last::check(checker, call);
            recompilation::tf_batch_without_drop_remainder::check(checker, expr, call);
            recompilation::make_csv_dataset_partial_batch::check(checker, expr, call);
            recompilation::dynamic_padding::check(checker, call);
            recompilation::nonzero_call::check(checker, expr, call);
            recompilation::masked_select_call::check(checker, expr, call);
            recompilation::unique_without_size::check(checker, expr, call);
            host_sync::item_in_step_loop::check(checker, expr, call);
            host_sync::cpu_in_step_loop::check(checker, expr, call);
            host_sync::numpy_in_step_loop::check(checker, expr, call);
            host_sync::tolist_in_step_loop::check(checker, expr, call);
            host_sync::print_tensor_in_step_loop::check(checker, expr, call);
            host_sync::scalar_conversion_in_step_loop::check(checker, expr, call);
            host_sync::blocking_wait_in_step_loop::check(checker, expr, call);
            host_sync::host_metric_in_step_loop::check(checker, expr, call);
            cuda::cuda_method_call::check(checker, expr, call);
            cuda::cuda_device_string::check(checker, expr, call);
            cuda::torch_cuda_api::check(checker, expr, call);
            cuda::nccl_backend::check(checker, call);
            cuda::pin_memory::check(checker, call);
            precision::fp16_autocast::check(checker, expr, call);
            precision::keras_mixed_float16::check(checker, call);
            precision::jax_enable_x64::check(checker, expr, call);
            precision::keras_loss_scale_optimizer::check(checker, expr, call);
            distribution::ddp_device_ids::check(checker, expr, call);
            distribution::multiprocessing_spawn::check(checker, expr, call);
            distribution::mirrored_strategy::check(checker, expr, call);
            distribution::experimental_shard_map::check_call(checker, call);
            distribution::shard_map_check_rep::check(checker, call);
            distribution::device_put_replicated::check(checker, expr, call);
            distribution::xla_backend_without_init_method::check(checker, expr, call);
            input_pipeline::dataloader_num_workers_zero::check(checker, expr, call);
            input_pipeline::tf_data_without_prefetch::check(checker, expr, call);
            input_pipeline::prefetch_before_batch::check(checker, expr, call);
            input_pipeline::tf_py_function::check(checker, expr, call);
            input_pipeline::keras_compile_without_steps_per_execution::check(checker, expr, call);
            jax::jit_in_loop::check(checker, expr, call);
            jax::host_array_in_step_loop::check(checker, expr, call);
            jax::rng_split_outside_jit::check(checker, expr, call);
            checkpointing::torch_save_on_xla::check(checker, expr, call);
            checkpointing::checkpoint_every_step::check(checker, expr, call);
            checkpointing::keras_save_local_path::check(checker, call);
            checkpointing::flax_legacy_checkpoints::check(checker, expr, call);
            precision::float64_dtype::check_call(checker, expr, call);
            precision::half_cast::check_call(checker, expr, call);
        }
        ExprKind::Attribute { .. } | ExprKind::Name(_) => {
            precision::float64_dtype::check_attr(checker, expr);
            precision::half_cast::check_attr(checker, expr);
            distribution::pmap_usage::check(checker, expr);
            distribution::experimental_shard_map::check_attr(checker, expr);
        }
        ExprKind::Subscript { .. } => recompilation::boolean_mask_index::check(checker, expr),
        _ => {}
    }
}
