//! Which rules look at which node (the dispatch table, in ruff's manner).

use tpuport_python::ast::{Expr, ExprKind, Stmt};

use crate::checker::Checker;
use crate::codes::Rule;
use crate::rules::{
    checkpointing, cuda, distribution, host_sync, input_pipeline, jax, precision, recompilation,
};

/// Runs a rule's check only when the rule is enabled: a check only reports its own rule, so a
/// disabled one is skipped whole (the port lints with a handful of rules on every pass).
macro_rules! gated {
    ($checker:ident, $rule:ident, $check:expr) => {
        if $checker.enabled(Rule::$rule) {
            $check;
        }
    };
}

/// Rules that look at statements.
pub(crate) fn statement(checker: &mut Checker, stmt: &Stmt) {
    gated!(checker, TensorControlFlow, recompilation::tensor_control_flow::check(checker, stmt));
    gated!(checker, CudnnFlag, cuda::cudnn_flag::check(checker, stmt));
    gated!(checker, CudaVisibleDevices, cuda::cuda_visible_devices::check(checker, stmt));
    gated!(checker, XlaUseBf16Env, precision::xla_use_bf16_env::check(checker, stmt));
    gated!(checker, JaxEnableX64, precision::jax_enable_x64::check_env(checker, stmt));
    gated!(checker, MasterAddrEnv, distribution::master_addr_env::check(checker, stmt));
    gated!(
        checker,
        DataloaderWithoutDeviceLoader,
        input_pipeline::dataloader_without_device_loader::check(checker, stmt)
    );
    gated!(checker, MissingDonateArgnums, jax::missing_donate_argnums::check(checker, stmt));
    gated!(checker, GradScaler, precision::grad_scaler::check_stmt(checker, stmt));
    gated!(
        checker,
        ExperimentalShardMap,
        distribution::experimental_shard_map::check_stmt(checker, stmt)
    );
}

/// Rules that look at expressions.
pub(crate) fn expression(checker: &mut Checker, expr: &Expr) {
    match &expr.kind {
        ExprKind::Call(call) => {
            gated!(
                checker,
                DataloaderWithoutDropLast,
                recompilation::dataloader_without_drop_last::check(checker, call)
            );
            gated!(
                checker,
                DistributedSamplerWithoutDropLast,
                recompilation::distributed_sampler_without_drop_last::check(checker, call)
            );
            gated!(
                checker,
                TfBatchWithoutDropRemainder,
                recompilation::tf_batch_without_drop_remainder::check(checker, expr, call)
            );
            gated!(
                checker,
                MakeCsvDatasetPartialBatch,
                recompilation::make_csv_dataset_partial_batch::check(checker, expr, call)
            );
            gated!(checker, DynamicPadding, recompilation::dynamic_padding::check(checker, call));
            gated!(checker, NonzeroCall, recompilation::nonzero_call::check(checker, expr, call));
            gated!(
                checker,
                MaskedSelectCall,
                recompilation::masked_select_call::check(checker, expr, call)
            );
            gated!(
                checker,
                UniqueWithoutSize,
                recompilation::unique_without_size::check(checker, expr, call)
            );
            gated!(
                checker,
                ItemInStepLoop,
                host_sync::item_in_step_loop::check(checker, expr, call)
            );
            gated!(checker, CpuInStepLoop, host_sync::cpu_in_step_loop::check(checker, expr, call));
            gated!(
                checker,
                NumpyInStepLoop,
                host_sync::numpy_in_step_loop::check(checker, expr, call)
            );
            gated!(
                checker,
                TolistInStepLoop,
                host_sync::tolist_in_step_loop::check(checker, expr, call)
            );
            gated!(
                checker,
                PrintTensorInStepLoop,
                host_sync::print_tensor_in_step_loop::check(checker, expr, call)
            );
            gated!(
                checker,
                ScalarConversionInStepLoop,
                host_sync::scalar_conversion_in_step_loop::check(checker, expr, call)
            );
            gated!(
                checker,
                BlockingWaitInStepLoop,
                host_sync::blocking_wait_in_step_loop::check(checker, expr, call)
            );
            gated!(
                checker,
                HostMetricInStepLoop,
                host_sync::host_metric_in_step_loop::check(checker, expr, call)
            );
            gated!(checker, CudaMethodCall, cuda::cuda_method_call::check(checker, expr, call));
            gated!(checker, CudaDeviceString, cuda::cuda_device_string::check(checker, expr, call));
            gated!(checker, TorchCudaApi, cuda::torch_cuda_api::check(checker, expr, call));
            gated!(checker, NcclBackend, cuda::nccl_backend::check(checker, call));
            gated!(checker, PinMemory, cuda::pin_memory::check(checker, call));
            gated!(checker, Fp16Autocast, precision::fp16_autocast::check(checker, expr, call));
            gated!(
                checker,
                KerasMixedFloat16,
                precision::keras_mixed_float16::check(checker, call)
            );
            gated!(checker, JaxEnableX64, precision::jax_enable_x64::check(checker, expr, call));
            gated!(
                checker,
                KerasLossScaleOptimizer,
                precision::keras_loss_scale_optimizer::check(checker, expr, call)
            );
            gated!(checker, DdpDeviceIds, distribution::ddp_device_ids::check(checker, expr, call));
            gated!(
                checker,
                MultiprocessingSpawn,
                distribution::multiprocessing_spawn::check(checker, expr, call)
            );
            gated!(
                checker,
                MirroredStrategy,
                distribution::mirrored_strategy::check(checker, expr, call)
            );
            gated!(
                checker,
                ExperimentalShardMap,
                distribution::experimental_shard_map::check_call(checker, call)
            );
            gated!(
                checker,
                ShardMapCheckRep,
                distribution::shard_map_check_rep::check(checker, call)
            );
            gated!(
                checker,
                DevicePutReplicated,
                distribution::device_put_replicated::check(checker, expr, call)
            );
            gated!(
                checker,
                XlaBackendWithoutInitMethod,
                distribution::xla_backend_without_init_method::check(checker, expr, call)
            );
            gated!(
                checker,
                DataloaderNumWorkersZero,
                input_pipeline::dataloader_num_workers_zero::check(checker, expr, call)
            );
            gated!(
                checker,
                TfDataWithoutPrefetch,
                input_pipeline::tf_data_without_prefetch::check(checker, expr, call)
            );
            gated!(
                checker,
                PrefetchBeforeBatch,
                input_pipeline::prefetch_before_batch::check(checker, expr, call)
            );
            gated!(
                checker,
                TfPyFunction,
                input_pipeline::tf_py_function::check(checker, expr, call)
            );
            gated!(
                checker,
                KerasCompileWithoutStepsPerExecution,
                input_pipeline::keras_compile_without_steps_per_execution::check(
                    checker, expr, call
                )
            );
            gated!(checker, JitInLoop, jax::jit_in_loop::check(checker, expr, call));
            gated!(
                checker,
                HostArrayInStepLoop,
                jax::host_array_in_step_loop::check(checker, expr, call)
            );
            gated!(
                checker,
                RngSplitOutsideJit,
                jax::rng_split_outside_jit::check(checker, expr, call)
            );
            gated!(
                checker,
                TorchSaveOnXla,
                checkpointing::torch_save_on_xla::check(checker, expr, call)
            );
            gated!(
                checker,
                CheckpointEveryStep,
                checkpointing::checkpoint_every_step::check(checker, expr, call)
            );
            gated!(
                checker,
                KerasSaveLocalPath,
                checkpointing::keras_save_local_path::check(checker, call)
            );
            gated!(
                checker,
                FlaxLegacyCheckpoints,
                checkpointing::flax_legacy_checkpoints::check(checker, expr, call)
            );
            gated!(
                checker,
                Float64Dtype,
                precision::float64_dtype::check_call(checker, expr, call)
            );
            gated!(checker, HalfCast, precision::half_cast::check_call(checker, expr, call));
        }
        ExprKind::Attribute { .. } | ExprKind::Name(_) => {
            gated!(checker, Float64Dtype, precision::float64_dtype::check_attr(checker, expr));
            gated!(checker, HalfCast, precision::half_cast::check_attr(checker, expr));
            gated!(checker, PmapUsage, distribution::pmap_usage::check(checker, expr));
            gated!(checker, TorchCudaApi, cuda::torch_cuda_api::check_attr(checker, expr));
            gated!(
                checker,
                ExperimentalShardMap,
                distribution::experimental_shard_map::check_attr(checker, expr)
            );
        }
        ExprKind::Subscript { .. } => {
            gated!(
                checker,
                BooleanMaskIndex,
                recompilation::boolean_mask_index::check(checker, expr)
            );
        }
        _ => {}
    }
}
