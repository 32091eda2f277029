//! [`Program`]: code handed to `PJRT_Client_Compile`.

use crate::sys;

/// A program to compile: StableHLO as MLIR text or bytecode (format `mlir`), or HLO.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    code: Vec<u8>,
    format: &'static str,
}

impl Program {
    /// StableHLO / MHLO as MLIR text or bytecode (a VHLO portable artifact from `jax.export`
    /// included). The plugin tells the two apart by the bytecode magic.
    #[must_use]
    pub fn mlir(code: Vec<u8>) -> Program {
        Program { code, format: "mlir" }
    }

    /// True when the code is MLIR bytecode (`ML\xefR` magic) rather than text.
    #[must_use]
    pub fn is_bytecode(&self) -> bool {
        self.code.starts_with(b"ML\xefR")
    }

    /// The code bytes.
    #[must_use]
    pub fn code(&self) -> &[u8] {
        &self.code
    }

    /// The format name passed to the plugin.
    #[must_use]
    pub fn format(&self) -> &'static str {
        self.format
    }

    /// The C view; borrows `self` (the plugin only reads `code` during compile).
    pub(crate) fn raw(&self) -> sys::PJRT_Program {
        let mut p = sys::PJRT_Program::new();
        p.code = self.code.as_ptr().cast_mut().cast();
        p.code_size = self.code.len();
        p.format = self.format.as_ptr().cast();
        p.format_size = self.format.len();
        p
    }
}
