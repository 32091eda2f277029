//! The one error type of this crate.

use std::path::PathBuf;

/// Everything that can go wrong reading a catalog, naming a slice or padding a tensor.
///
/// Every message is one line and names what it is about: the catalog file and field, the slice
/// name, the chip.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HwError {
    /// A catalog file could not be read.
    #[error("cannot read catalog `{}`", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// A catalog file is larger than any sensible catalog.
    #[error("catalog `{}` is {size} bytes, over the {limit}-byte limit", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
        /// The largest size accepted.
        limit: u64,
    },

    /// A catalog file is not valid TOML, or has a key or value of the wrong kind.
    #[error("catalog `{origin}`{}: {message}", line.map(|l| format!(": line {l}")).unwrap_or_default())]
    Syntax {
        /// The file (or `built-in`).
        origin: String,
        /// 1-based line of the problem, where known.
        line: Option<usize>,
        /// What is wrong, one line.
        message: String,
    },

    /// A field of a chip entry has a bad value.
    #[error("catalog `{origin}`: chip `{chip}`: field `{field}`: {message}")]
    Field {
        /// The file (or `built-in`).
        origin: String,
        /// The chip id as written in the file.
        chip: String,
        /// The field, as a dotted key (`peak.bf16`, `price.on_demand`).
        field: String,
        /// What is wrong.
        message: String,
    },

    /// A compiler-reported layout could not be read.
    #[error("layout `{text}`: {reason}")]
    Layout {
        /// The layout text.
        text: String,
        /// What is wrong.
        reason: String,
    },

    /// No chip has this id or alias.
    #[error("unknown chip `{name}`; known chips: {known}")]
    UnknownChip {
        /// The name asked for.
        name: String,
        /// The known ids, comma-separated.
        known: String,
    },

    /// A slice name does not name a valid slice.
    #[error("unknown slice `{name}`: {reason}")]
    UnknownSlice {
        /// The name asked for.
        name: String,
        /// Why, with the valid choices.
        reason: String,
    },

    /// The chip has no tiling rules (GPUs, or a user chip without a `tiling` table).
    #[error("chip `{chip}` has no TPU tiling rules")]
    NoTiling {
        /// The chip id.
        chip: String,
    },

    /// The dtype has no fixed size in TPU memory.
    #[error("dtype `{dtype}` has no TPU memory layout")]
    UnsupportedDtype {
        /// The dtype name.
        dtype: String,
    },

    /// A padded size does not fit in 64 bits.
    #[error("padded size of shape {shape:?} overflows 64 bits")]
    Overflow {
        /// The shape.
        shape: Vec<u64>,
    },
}

impl HwError {
    pub(crate) fn field(
        origin: &str,
        chip: &str,
        field: &str,
        message: impl Into<String>,
    ) -> HwError {
        HwError::Field {
            origin: origin.to_owned(),
            chip: chip.to_owned(),
            field: field.to_owned(),
            message: message.into(),
        }
    }
}
