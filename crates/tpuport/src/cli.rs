//! Command-line surface. Each verb's arguments are defined in its own `commands/<verb>.rs`;
//! this file only lists the verbs and the global options.

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::commands;

/// tpuport: audit, port, optimize, validate, benchmark and serve ML models on Cloud TPUs.
#[derive(Debug, Parser)]
#[command(name = "tpuport", version, about, propagate_version = true)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: GlobalArgs,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Options every verb accepts.
#[derive(Debug, Args)]
pub(crate) struct GlobalArgs {
    /// Output format for data written to stdout.
    #[arg(long, global = true, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
    /// Print only data and errors.
    #[arg(long, short, global = true)]
    pub(crate) quiet: bool,
    /// Print more detail on stderr.
    #[arg(long, short, global = true, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
    /// When to colour terminal output (NO_COLOR is honoured by `auto`).
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub(crate) color: ColorChoice,
    /// A Python interpreter whose site-packages are searched for PJRT plugins first, and which
    /// `doctor` asks for framework versions (default: the environment tpuport is installed in,
    /// the active or project venv, then the `python3` on PATH).
    #[arg(long, global = true, value_name = "PATH", env = "TPUPORT_PYTHON")]
    pub(crate) python: Option<std::path::PathBuf>,
}

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Human-readable text.
    Text,
    /// JSON with a versioned schema.
    Json,
    /// SARIF 2.1.0 (`check` and `profile`).
    Sarif,
}

/// Colour policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorChoice {
    /// Colour when stderr/stdout is a terminal and NO_COLOR is unset.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

impl Command {
    /// Whether the verb starts libtpu without a TPU attached (ahead-of-time compilation), so
    /// `main` prepares libtpu's offline environment before any thread exists.
    pub(crate) fn compiles_for_tpu_offline(&self) -> bool {
        match self {
            Command::Compile(_) => true,
            Command::Shard(a) => a.verify,
            Command::Audit(a) => {
                a.slice.is_some() && a.compiler != commands::audit::CompilerArg::None
            }
            _ => false,
        }
    }
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Show what a model, checkpoint or tensor file holds: format, producer, signature, ops,
    /// parameters.
    Inspect(commands::inspect::InspectArgs),
    /// Audit a model before touching a TPU: FLOPs, tiling padding, memory, where it fits,
    /// roofline estimates per generation, and support / risk findings.
    Audit(commands::audit::AuditArgs),
    /// Compile a model with the real TPU compiler (libtpu) for a slice, without a TPU: memory
    /// per chip and fit, cost, layouts and shardings, compile errors; save the executable.
    Compile(commands::compile::CompileArgs),
    /// List PJRT plugins (path, API version, platform, devices) and Python framework versions.
    Doctor(commands::doctor::DoctorArgs),
    /// Execute a StableHLO module on a PJRT device with inputs from .npy files.
    Run(commands::run::RunArgs),
    /// Lower an ONNX model to static StableHLO modules, one per batch bucket, with a manifest.
    Lower(commands::lower::LowerArgs),
    /// Benchmark a StableHLO module: compile time, latency percentiles, throughput.
    Bench(commands::bench::BenchArgs),
    /// Lint Python training and serving scripts for TPU-hostile patterns.
    Check(commands::check::CheckArgs),
    /// Rewrite Python scripts for torch_xla, TF TPUStrategy or JAX sharding.
    Port(commands::port::PortArgs),
    /// Plan how to shard a model or checkpoint over a TPU slice: mesh, partition spec per
    /// parameter, memory per chip, collectives per step; emit it as JAX or torch_xla code.
    Shard(commands::shard::ShardArgs),
    /// Show the accelerator catalog: chips, one chip's sourced figures, or a slice's topology.
    Catalog(commands::catalog::CatalogArgs),
    /// Print the documentation of a finding or rule code.
    Explain(commands::explain::ExplainArgs),
    /// Developer check: run the ONNX backend test cases (`make conformance` writes them)
    /// through `tpuport lower` on a PJRT device and report pass / fail / unsupported per op.
    Conformance(commands::conformance::ConformanceArgs),
    /// Compare a model's outputs with a reference (files, f32, onnxruntime), emulate TPU
    /// matmul precision, and bisect to the first divergent op.
    Validate(commands::validate::ValidateArgs),
    /// Serve models over KServe v2 (Open Inference Protocol) REST and gRPC with bucketed
    /// dynamic batching on a PJRT device; Prometheus metrics at /metrics.
    Serve(commands::serve::ServeArgs),
    /// Offline batch inference over a dataset (tensor shards or images): pipelined decode,
    /// bucketed execution with several batches in flight, resumable and shardable outputs.
    Batch(commands::batch::BatchArgs),
    /// Kubernetes manifests for a GKE TPU slice (serve, batch or train), refused when the
    /// model does not fit the slice.
    Deploy(commands::deploy::DeployArgs),
    /// Watch `tpuport serve` metrics (and libtpu's on a TPU VM): requests, latency, queue,
    /// batch sizes, rejections, memory; alarms on recompiles, shape drift, queue growth and
    /// rejections (`--check` exits 1 on any).
    Top(commands::top::TopArgs),
    /// Diagnose a run from its traces, torch_xla metrics reports and debug logs, and JAX
    /// compile logs: input-bound steps, recompilations, host syncs, CPU fallbacks, top ops.
    Profile(commands::profile::ProfileArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(commands::completions::CompletionsArgs),
    /// Write man pages for tpuport and each verb into a directory (`make man`).
    #[command(hide = true)]
    Man(commands::man::ManArgs),
}

/// `tpuport --version`: the crate version, the git commit it was built from, and the PJRT C
/// API version of the declarations it was built against.
pub(crate) fn long_version() -> String {
    let (major, minor) = tpuport_pjrt::HEADER_API_VERSION;
    format!(
        "{} (commit {}, PJRT C API {major}.{minor})",
        env!("CARGO_PKG_VERSION"),
        env!("TPUPORT_GIT_COMMIT")
    )
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    /// clap's own consistency checks over every verb (duplicate flags, conflicting globals).
    #[test]
    fn command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
