//! What runs: a StableHLO [`Module`] with its signature and shardings (read through the
//! StableHLO importer), the [`RuntimeOptions`] that open a PJRT client for it, and [`compile`]
//! through the runtime's executable cache.

use std::path::{Path, PathBuf};

use tpuport_formats::tensors::Slot;
use tpuport_model::{Attr, DType};
use tpuport_pjrt::{CompileOptions, Layout, Program, Runtime};

use crate::Observer;
use crate::error::{Context as _, Result, invalid, io};

/// One argument or result of `@main`.
#[derive(Clone, Debug)]
pub struct Param {
    /// Name (`arg0`, or the name the module gives).
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// `None` for dimensions that are not static.
    pub dims: Vec<Option<u64>>,
    /// `None`: no sharding annotation.
    pub layout: Option<Layout>,
}

impl Param {
    /// `f32[784,512]` (`?` for dynamic dimensions).
    #[must_use]
    pub fn type_string(&self) -> String {
        let d: Vec<String> =
            self.dims.iter().map(|d| d.map_or_else(|| "?".into(), |v| v.to_string())).collect();
        format!("{}[{}]", self.dtype, d.join(","))
    }

    /// The binder's view.
    #[must_use]
    pub fn slot(&self) -> Slot {
        Slot { name: self.name.clone(), dtype: self.dtype, dims: self.dims.clone() }
    }
}

/// A module to run.
#[derive(Clone, Debug)]
pub struct Module {
    /// The file (or a label for a module built in memory).
    pub path: PathBuf,
    /// The code.
    pub program: Program,
    /// `None` when the importer could not read a signature (bytecode is read header-only).
    pub args: Option<Vec<Param>>,
    /// Results, as `args`.
    pub results: Option<Vec<Param>>,
    /// `mhlo.num_partitions`.
    pub partitions: u32,
    /// Whether the module declares Shardy meshes.
    pub shardy: bool,
    /// StableHLO version the module targets, when it says.
    pub stablehlo_version: Option<String>,
    /// The batch: the data arguments' leading dimension, as the argument roles of `tpuport
    /// audit` decide them ([`tpuport_analysis::roles`]), so a module taking its weights as
    /// leading arguments is not measured at a weight's first dimension. `None` without a
    /// signature, without a data argument, or when it looks read from a weight.
    pub data_batch: Option<u64>,
}

impl Module {
    /// Reads the module and, through the StableHLO importer, its signature. A module whose
    /// signature cannot be read still runs (the plugin checks its inputs); the observer is
    /// told why.
    ///
    /// # Errors
    /// When the file cannot be read.
    pub fn load(path: &Path, obs: &dyn Observer) -> Result<Module> {
        let bytes =
            std::fs::read(path).map_err(|e| io(format!("reading {}", path.display()), e))?;
        let mut m = Module::new(path, Program::mlir(bytes));
        match tpuport_formats::open(path, &tpuport_formats::ImportOptions::default()) {
            Ok(model) => m.read_model(&model),
            Err(e) => obs.warn(&format!(
                "no signature for {}: {e}; inputs are checked by the plugin only",
                path.display()
            )),
        }
        Ok(m)
    }

    /// A module built in memory (a rewritten or lowered one), without a signature.
    #[must_use]
    pub fn new(path: &Path, program: Program) -> Module {
        Module {
            path: path.to_owned(),
            program,
            args: None,
            results: None,
            partitions: 1,
            shardy: false,
            stablehlo_version: None,
            data_batch: None,
        }
    }

    /// Reads the signature, partitions, meshes and data batch from `model` (the module read
    /// back through the StableHLO importer).
    pub(crate) fn read_model(&mut self, model: &tpuport_model::Model) {
        self.stablehlo_version.clone_from(&model.metadata.stablehlo_version);
        self.partitions = partitions(model);
        let mesh_text: Vec<&str> = model
            .metadata
            .properties
            .iter()
            .filter(|(k, v)| k == "mlir.module_op" && v.contains("sdy.mesh"))
            .map(|(_, v)| v.as_str())
            .collect();
        let meshes = tpuport_pjrt::parse_meshes(&mesh_text);
        self.shardy = !meshes.is_empty();
        let g = &model.graph;
        if g.inputs.is_empty() && g.outputs.is_empty() && g.nodes.is_empty() {
            return; // header-only read (bytecode)
        }
        let n = self.partitions;
        let param = |i: usize, id: tpuport_model::ValueId, is_arg: bool| {
            let v = g.value(id);
            let attr = |name: &str| {
                if is_arg {
                    tpuport_formats::stablehlo::arg_attr(g, i, name)
                } else {
                    tpuport_formats::stablehlo::result_attr(g, i, name)
                }
            };
            let text = |a: &Attr| match a {
                Attr::Str(s) | Attr::Text(s) => Some(s.clone()),
                _ => None,
            };
            let layout = attr("sdy.sharding")
                .and_then(text)
                .and_then(|s| Layout::from_shardy(&s, &meshes))
                .or_else(|| {
                    attr("mhlo.sharding").and_then(text).and_then(|s| Layout::from_gspmd(&s, n))
                });
            Some(Param {
                name: v.name.trim_start_matches('%').to_owned(),
                dtype: v.ty.dtype?,
                dims: v.ty.shape.as_ref()?.0.iter().map(tpuport_model::Dim::known).collect(),
                layout,
            })
        };
        self.args = g.inputs.iter().enumerate().map(|(i, &id)| param(i, id, true)).collect();
        let roles = tpuport_analysis::roles::assign(
            model,
            &tpuport_analysis::roles::RoleOptions::default(),
        )
        .ok();
        self.data_batch = roles.and_then(|r| {
            let b = r.batch?;
            r.batch_is_weight_dim(b).is_none().then_some(b)
        });
        self.results = g.outputs.iter().enumerate().map(|(i, &id)| param(i, id, false)).collect();
    }

    /// Compile options: SPMD over the partitions when there are several.
    #[must_use]
    pub fn compile_options(&self) -> CompileOptions {
        if self.partitions > 1 {
            // The Shardy flag also handles GSPMD modules (the plugin falls back to GSPMD).
            CompileOptions::spmd(self.partitions, true)
        } else {
            CompileOptions::default()
        }
    }

    /// Argument shardings by position.
    #[must_use]
    pub fn arg_layouts(&self) -> Vec<Option<Layout>> {
        self.args.iter().flatten().map(|p| p.layout.clone()).collect()
    }

    /// Result shardings by position.
    #[must_use]
    pub fn result_layouts(&self) -> Vec<Option<Layout>> {
        self.results.iter().flatten().map(|p| p.layout.clone()).collect()
    }

    /// Opens a client with enough devices for the module's partitions; warns through `obs`
    /// when the module targets a newer StableHLO than the plugin.
    ///
    /// # Errors
    /// Fewer `--devices` than partitions, or the runtime's error.
    pub fn open_runtime(&self, opts: &RuntimeOptions, obs: &dyn Observer) -> Result<Runtime> {
        let need = self.partitions.max(1);
        let devices = opts.devices.unwrap_or(need);
        if devices < need {
            return Err(invalid(format!(
                "{} has {need} partitions but --devices is {devices}",
                self.path.display()
            )));
        }
        let rt = Runtime::open(opts.plugin.as_deref(), devices, !opts.no_cache)?;
        for s in &rt.skipped {
            obs.warn(&s.note(&rt.found));
        }
        obs.info(&format!("plugin: {} ({})", rt.found.path.display(), rt.found.source));
        if let Some(v) = &self.stablehlo_version
            && let Some(cur) = rt.stablehlo_newer_than_plugin(v)
        {
            obs.warn(&format!(
                "{} targets StableHLO {v}, newer than the plugin's {cur}; compilation may fail",
                self.path.display()
            ));
        }
        Ok(rt)
    }
}

/// `mhlo.num_partitions` of a StableHLO model (1 when absent).
#[must_use]
pub fn partitions(model: &tpuport_model::Model) -> u32 {
    model
        .metadata
        .properties
        .iter()
        .find(|(k, _)| k == "mhlo.num_partitions")
        .and_then(|(_, v)| v.split(':').next()?.trim().parse::<u32>().ok())
        .unwrap_or(1)
}

/// How to open the runtime.
#[derive(Clone, Debug, Default)]
pub struct RuntimeOptions {
    /// PJRT plugin library (default: discovery).
    pub plugin: Option<PathBuf>,
    /// Devices for the CPU plugin's client (default: the module's partition count).
    pub devices: Option<u32>,
    /// Compile every time instead of using the executable cache.
    pub no_cache: bool,
}

/// `context` helper for module paths.
pub(crate) fn compiling(path: &Path) -> impl FnOnce() -> String + '_ {
    move || format!("compiling {}", path.display())
}

/// Compiles `module` through the runtime's cache.
///
/// # Errors
/// The compiler's error, with the module named.
pub fn compile(rt: &Runtime, module: &Module) -> Result<tpuport_pjrt::Compiled> {
    rt.cache
        .get_or_compile(&rt.client, &module.program, &module.compile_options())
        .context(compiling(&module.path))
}
