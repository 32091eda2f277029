//! The one way out to the terminal: data to stdout, everything else to stderr.
//!
//! A broken pipe on stdout (`tpuport inspect m.onnx | head`) ends the process quietly with exit
//! 0, the way command-line tools are expected to behave.

#![allow(clippy::print_stderr, reason = "this module is the binary's terminal writer")]

use std::io::{IsTerminal, Write};

use crate::cli::{ColorChoice, GlobalArgs};

/// Environment variable that disables colour when set to any non-empty value.
pub(crate) const NO_COLOR: &str = "NO_COLOR";

/// Writes data and messages according to the global options.
#[derive(Debug)]
pub(crate) struct Printer {
    quiet: bool,
    verbose: u8,
    color: bool,
}

impl Printer {
    /// Builds the printer from the global options and the environment.
    pub(crate) fn new(g: &GlobalArgs) -> Printer {
        let no_color = std::env::var_os(NO_COLOR).is_some_and(|v| !v.is_empty());
        let color = match g.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => !no_color && std::io::stderr().is_terminal(),
        };
        Printer { quiet: g.quiet, verbose: g.verbose, color }
    }

    /// Writes report data to stdout. A closed pipe exits 0 at once.
    pub(crate) fn data(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
            eprintln!("error: writing to stdout: {e}");
            std::process::exit(2);
        }
    }

    /// A warning on stderr (suppressed by `--quiet`).
    pub(crate) fn warn(&self, msg: &str) {
        if !self.quiet {
            eprintln!("{}: {msg}", self.paint("warning", "33"));
        }
    }

    /// A line on stderr that the user asked for (not suppressed by `--quiet`).
    pub(crate) fn note(&self, msg: &str) {
        eprintln!("{msg}");
    }

    /// An informational line on stderr (only with `-v`).
    pub(crate) fn info(&self, msg: &str) {
        if self.verbose > 0 && !self.quiet {
            eprintln!("{msg}");
        }
    }

    /// Prints an error chain as one line: `error: outer: cause: root` (anyhow's `{:#}`).
    pub(crate) fn error(&self, err: &anyhow::Error) {
        eprintln!("{}: {err:#}", self.paint("error", "31"));
    }

    fn paint(&self, word: &str, code: &str) -> String {
        if self.color { format!("\x1b[1;{code}m{word}\x1b[0m") } else { word.to_owned() }
    }
}
