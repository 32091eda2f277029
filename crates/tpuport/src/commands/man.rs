//! `tpuport man --out DIR`: man pages generated from the clap definitions, one for `tpuport`
//! and one per verb (`tpuport-audit.1`, …), written atomically into DIR (`make man`).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::{Args, CommandFactory as _};

use crate::cli::{Cli, GlobalArgs};
use crate::commands::Status;
use crate::printer::Printer;

/// Arguments of `tpuport man`.
#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// Directory to write the pages into (created if missing).
    #[arg(long, short, value_name = "DIR")]
    pub(crate) out: PathBuf,
}

pub(crate) fn run(a: &ManArgs, _g: &GlobalArgs, p: &Printer) -> anyhow::Result<Status> {
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let mut cmd = Cli::command();
    cmd.build();
    let mut written = vec![page(&a.out, "tpuport", cmd.clone())?];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("tpuport-{}", sub.get_name());
        let static_name: &'static str = name.clone().leak();
        written.push(page(&a.out, &name, sub.clone().name(static_name))?);
    }
    for w in &written {
        p.info(&format!("wrote {}", w.display()));
    }
    p.note(&format!("{} man pages in {}", written.len(), a.out.display()));
    Ok(Status::Success)
}

/// Renders one page and writes `<dir>/<name>.1` atomically.
fn page(dir: &Path, name: &str, cmd: clap::Command) -> anyhow::Result<PathBuf> {
    let mut buf: Vec<u8> = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut buf).with_context(|| format!("rendering {name}.1"))?;
    let path = dir.join(format!("{name}.1"));
    tpuport_model::fs::write_atomic_bytes(&path, &buf)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}
