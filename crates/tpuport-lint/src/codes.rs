//! The one code table: every rule, its stable code, family and status.
//!
//! Codes never change meaning. `TPU1xx` recompilation, `TPU2xx` host syncs, `TPU3xx` CUDA
//! leftovers, `TPU4xx` precision, `TPU5xx` distribution, `TPU6xx` input pipeline, `TPU7xx` JAX
//! specifics, `TPU8xx` checkpointing.

use tpuport_codes::Documented;

use crate::rules;
use crate::violation::AsRule;

/// Whether a rule runs by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum RuleStatus {
    /// On by default.
    Stable,
    /// Only with `--preview` or when selected by its exact code.
    Preview,
}

/// Rule families, one per hundreds digit of the code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Family {
    /// Shapes that change between steps, so XLA compiles again.
    Recompilation,
    /// Device-to-host transfers that stall the step loop.
    HostSync,
    /// Code that only works on CUDA.
    Cuda,
    /// fp16 / fp64 where TPUs want bf16 / fp32.
    Precision,
    /// Multi-device setup for GPUs instead of TPUs.
    Distribution,
    /// Input pipelines that starve the TPU.
    InputPipeline,
    /// JAX-specific patterns.
    Jax,
    /// Saving and restoring state on TPU.
    Checkpointing,
}

impl Family {
    /// All families, in code order.
    pub const ALL: [Family; 8] = [
        Family::Recompilation,
        Family::HostSync,
        Family::Cuda,
        Family::Precision,
        Family::Distribution,
        Family::InputPipeline,
        Family::Jax,
        Family::Checkpointing,
    ];

    /// Code prefix (`TPU1` …).
    #[must_use]
    pub fn prefix(self) -> &'static str {
        FAMILIES[self as usize].0
    }

    /// Human title.
    #[must_use]
    pub fn title(self) -> &'static str {
        FAMILIES[self as usize].1
    }
}

/// (code prefix, title) of each [`Family`], in code order.
pub const FAMILIES: [(&str, &str); 8] = [
    ("TPU1", "Recompilation"),
    ("TPU2", "Host syncs in the step loop"),
    ("TPU3", "CUDA leftovers"),
    ("TPU4", "Precision"),
    ("TPU5", "Distribution"),
    ("TPU6", "Input pipeline"),
    ("TPU7", "JAX specifics"),
    ("TPU8", "Checkpointing"),
];

macro_rules! rule_table {
    ($( $code:literal, $status:ident, $fam:ident :: $module:ident :: $variant:ident; )*) => {
        /// Every rule tpuport knows.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Rule { $( #[doc = $code] $variant, )* }

        impl Rule {
            /// All rules, in code order.
            pub const ALL: &'static [Rule] = &[ $( Rule::$variant, )* ];

            /// The stable code, e.g. `TPU101`.
            #[must_use]
            pub fn code(self) -> &'static str {
                match self { $( Rule::$variant => $code, )* }
            }

            /// Stable or preview.
            #[must_use]
            pub fn status(self) -> RuleStatus {
                match self { $( Rule::$variant => RuleStatus::$status, )* }
            }

            fn variant_name(self) -> &'static str {
                match self { $( Rule::$variant => stringify!($variant), )* }
            }

            pub(crate) fn doc_comment(self) -> &'static str {
                match self { $( Rule::$variant => <rules::$fam::$module::$variant as Documented>::DOC, )* }
            }

            pub(crate) fn source_file(self) -> &'static str {
                match self {
                    $( Rule::$variant => concat!("crates/tpuport-lint/src/rules/", stringify!($fam), "/", stringify!($module), ".rs"), )*
                }
            }
        }

        $( impl AsRule for rules::$fam::$module::$variant { const RULE: Rule = Rule::$variant; } )*
    };
}

rule_table! {
    "TPU101", Stable, recompilation::dataloader_without_drop_last::DataloaderWithoutDropLast;
    "TPU102", Stable, recompilation::distributed_sampler_without_drop_last::DistributedSamplerWithoutDropLast;
    "TPU103", Stable, recompilation::tf_batch_without_drop_remainder::TfBatchWithoutDropRemainder;
    "TPU104", Stable, recompilation::dynamic_padding::DynamicPadding;
    "TPU105", Stable, recompilation::nonzero_call::NonzeroCall;
    "TPU106", Stable, recompilation::masked_select_call::MaskedSelectCall;
    "TPU107", Stable, recompilation::boolean_mask_index::BooleanMaskIndex;
    "TPU108", Stable, recompilation::tensor_control_flow::TensorControlFlow;
    "TPU109", Stable, recompilation::unique_without_size::UniqueWithoutSize;
    "TPU110", Stable, recompilation::make_csv_dataset_partial_batch::MakeCsvDatasetPartialBatch;
    "TPU201", Stable, host_sync::item_in_step_loop::ItemInStepLoop;
    "TPU202", Stable, host_sync::cpu_in_step_loop::CpuInStepLoop;
    "TPU203", Stable, host_sync::numpy_in_step_loop::NumpyInStepLoop;
    "TPU204", Stable, host_sync::tolist_in_step_loop::TolistInStepLoop;
    "TPU205", Stable, host_sync::print_tensor_in_step_loop::PrintTensorInStepLoop;
    "TPU206", Stable, host_sync::scalar_conversion_in_step_loop::ScalarConversionInStepLoop;
    "TPU207", Stable, host_sync::blocking_wait_in_step_loop::BlockingWaitInStepLoop;
    "TPU208", Stable, host_sync::host_metric_in_step_loop::HostMetricInStepLoop;
    "TPU301", Stable, cuda::cuda_method_call::CudaMethodCall;
    "TPU302", Stable, cuda::cuda_device_string::CudaDeviceString;
    "TPU303", Stable, cuda::torch_cuda_api::TorchCudaApi;
    "TPU304", Stable, cuda::cudnn_flag::CudnnFlag;
    "TPU305", Stable, cuda::nccl_backend::NcclBackend;
    "TPU306", Stable, cuda::pin_memory::PinMemory;
    "TPU307", Stable, cuda::cuda_visible_devices::CudaVisibleDevices;
    "TPU401", Stable, precision::fp16_autocast::Fp16Autocast;
    "TPU402", Stable, precision::grad_scaler::GradScaler;
    "TPU403", Stable, precision::keras_mixed_float16::KerasMixedFloat16;
    "TPU404", Stable, precision::float64_dtype::Float64Dtype;
    "TPU405", Stable, precision::jax_enable_x64::JaxEnableX64;
    "TPU406", Stable, precision::xla_use_bf16_env::XlaUseBf16Env;
    "TPU407", Stable, precision::keras_loss_scale_optimizer::KerasLossScaleOptimizer;
    "TPU408", Stable, precision::half_cast::HalfCast;
    "TPU501", Stable, distribution::ddp_device_ids::DdpDeviceIds;
    "TPU502", Stable, distribution::multiprocessing_spawn::MultiprocessingSpawn;
    "TPU503", Stable, distribution::mirrored_strategy::MirroredStrategy;
    "TPU504", Stable, distribution::pmap_usage::PmapUsage;
    "TPU505", Stable, distribution::experimental_shard_map::ExperimentalShardMap;
    "TPU506", Stable, distribution::shard_map_check_rep::ShardMapCheckRep;
    "TPU507", Stable, distribution::device_put_replicated::DevicePutReplicated;
    "TPU508", Stable, distribution::master_addr_env::MasterAddrEnv;
    "TPU509", Stable, distribution::xla_backend_without_init_method::XlaBackendWithoutInitMethod;
    "TPU601", Stable, input_pipeline::dataloader_num_workers_zero::DataloaderNumWorkersZero;
    "TPU602", Stable, input_pipeline::tf_data_without_prefetch::TfDataWithoutPrefetch;
    "TPU603", Stable, input_pipeline::tf_py_function::TfPyFunction;
    "TPU604", Preview, input_pipeline::dataloader_without_device_loader::DataloaderWithoutDeviceLoader;
    "TPU605", Preview, input_pipeline::keras_compile_without_steps_per_execution::KerasCompileWithoutStepsPerExecution;
    "TPU606", Stable, input_pipeline::prefetch_before_batch::PrefetchBeforeBatch;
    "TPU701", Stable, jax::jit_in_loop::JitInLoop;
    "TPU702", Stable, jax::missing_donate_argnums::MissingDonateArgnums;
    "TPU703", Stable, jax::host_array_in_step_loop::HostArrayInStepLoop;
    "TPU704", Stable, jax::rng_split_outside_jit::RngSplitOutsideJit;
    "TPU801", Stable, checkpointing::torch_save_on_xla::TorchSaveOnXla;
    "TPU802", Stable, checkpointing::checkpoint_every_step::CheckpointEveryStep;
    "TPU803", Preview, checkpointing::keras_save_local_path::KerasSaveLocalPath;
    "TPU804", Stable, checkpointing::flax_legacy_checkpoints::FlaxLegacyCheckpoints;
}

impl Rule {
    /// Kebab-case name (`dataloader-without-drop-last`); reads as "allow <name>".
    #[must_use]
    pub fn name(self) -> String {
        let mut out = String::new();
        for (i, ch) in self.variant_name().chars().enumerate() {
            if ch.is_ascii_uppercase() {
                if i > 0 {
                    out.push('-');
                }
                out.push(ch.to_ascii_lowercase());
            } else {
                out.push(ch);
            }
        }
        out
    }

    /// The family this code belongs to.
    #[must_use]
    pub fn family(self) -> Family {
        let code = self.code();
        Family::ALL
            .into_iter()
            .find(|f| code.starts_with(f.prefix()))
            .unwrap_or(Family::Recompilation)
    }
}
