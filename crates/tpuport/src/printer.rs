//! The one way out to the terminal: data to stdout, everything else to stderr.
//!
//! Writing data never ends the process. The first failed write to stdout is kept, later data is
//! dropped, the verb finishes (so temporary folders are removed and the PJRT client is torn
//! down), and `main` turns the kept error into the exit status: a broken pipe
//! (`tpuport inspect m.onnx | head`) exits 0 quietly, the way command-line tools are expected
//! to behave; any other write error prints one line and exits 2. Messages on stderr are best
//! effort: a closed stderr never panics.

use std::io::{IsTerminal, Write};
use std::sync::{Mutex, PoisonError};

use tpuport_report::Paint;

use crate::cli::{ColorChoice, GlobalArgs};

/// Environment variable that disables colour when set to any non-empty value.
pub(crate) const NO_COLOR: &str = "NO_COLOR";

/// Why data could not be written to stdout.
#[derive(Debug)]
pub(crate) enum OutputError {
    /// The reader went away (`| head`): not an error for the user.
    BrokenPipe,
    /// Anything else (a full disk behind a redirect, a closed descriptor).
    Write(std::io::Error),
}

/// Writes data and messages according to the global options.
#[derive(Debug)]
pub(crate) struct Printer {
    quiet: bool,
    verbose: u8,
    /// Colour for messages on stderr.
    color: bool,
    /// Colour for data on stdout.
    data_color: bool,
    /// The first failed write to stdout.
    failed: Mutex<Option<OutputError>>,
}

impl Printer {
    /// Builds the printer from the global options and the environment.
    pub(crate) fn new(g: &GlobalArgs) -> Printer {
        let no_color = std::env::var_os(NO_COLOR).is_some_and(|v| !v.is_empty());
        let decide = |terminal: bool| match g.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => !no_color && terminal,
        };
        Printer {
            quiet: g.quiet,
            verbose: g.verbose,
            color: decide(std::io::stderr().is_terminal()),
            data_color: decide(std::io::stdout().is_terminal()),
            failed: Mutex::new(None),
        }
    }

    /// How text reports on stdout may be coloured.
    pub(crate) fn paint(&self) -> Paint {
        Paint::new(self.data_color)
    }

    /// Writes report data to stdout. After a failed write, data is dropped; `main` reads the
    /// failure with [`Printer::take_output_error`].
    pub(crate) fn data(&self, text: &str) {
        let mut failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        if failed.is_some() {
            return;
        }
        let mut out = std::io::stdout().lock();
        if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            let err = if e.kind() == std::io::ErrorKind::BrokenPipe {
                OutputError::BrokenPipe
            } else {
                OutputError::Write(e)
            };
            *failed = Some(err);
        }
    }

    /// Writes `value` as pretty JSON (with a trailing newline) to stdout.
    pub(crate) fn json<T: serde::Serialize + ?Sized>(&self, value: &T) -> anyhow::Result<()> {
        self.data(&tpuport_report::json::to_pretty(value)?);
        Ok(())
    }

    /// The failed write to stdout, if any.
    pub(crate) fn take_output_error(&self) -> Option<OutputError> {
        self.failed.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// A warning on stderr (suppressed by `--quiet`).
    pub(crate) fn warn(&self, msg: &str) {
        if !self.quiet {
            self.stderr(&format!("{}: {msg}", self.paint_stderr("warning", "33")));
        }
    }

    /// A line on stderr that the user asked for (not suppressed by `--quiet`).
    pub(crate) fn note(&self, msg: &str) {
        self.stderr(msg);
    }

    /// An informational line on stderr (only with `-v`).
    pub(crate) fn info(&self, msg: &str) {
        if self.verbose > 0 && !self.quiet {
            self.stderr(msg);
        }
    }

    /// Prints an error chain as one line: `error: outer: cause: root` (anyhow's `{:#}`).
    pub(crate) fn error(&self, err: &anyhow::Error) {
        self.stderr(&format!("{}: {err:#}", self.paint_stderr("error", "31")));
    }

    /// One line on stderr; a failure to write it is ignored (there is nowhere left to say so).
    fn stderr(&self, line: &str) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}");
    }

    fn paint_stderr(&self, word: &str, code: &str) -> String {
        if self.color { format!("\x1b[1;{code}m{word}\x1b[0m") } else { word.to_owned() }
    }
}
