//! The parsed module before it becomes a [`tpuport_model::Model`]: every op in generic shape
//! (name, operands, attributes by their generic names with generic-form text, regions, result
//! types), whichever syntax the file used.

use std::collections::HashMap;

use tpuport_model::TensorType;

/// A type as written: the neutral reading plus the normalised MLIR spelling.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Type {
    /// Element type and shape where the type is a ranked/unranked tensor of a known dtype.
    pub(crate) tt: TensorType,
    /// MLIR spelling (`tensor<2x?xf32>`, `!stablehlo.token`, `tuple<...>`).
    pub(crate) text: String,
}

/// A block argument or function parameter.
#[derive(Clone, Debug)]
pub(crate) struct Arg {
    /// `%arg0`.
    pub(crate) name: String,
    /// Its type.
    pub(crate) ty: Type,
    /// Argument attributes (`{mhlo.sharding = "..."}`), verbatim generic text.
    pub(crate) attrs: Vec<(String, String)>,
    /// Raw `loc(...)` body, unresolved.
    pub(crate) loc: Option<String>,
}

/// One operation.
#[derive(Clone, Debug, Default)]
pub(crate) struct Op {
    /// Result value names, one per result (`%0`, or `%0#0`, `%0#1` for `%0:2`).
    pub(crate) results: Vec<String>,
    /// Op name (`stablehlo.add`).
    pub(crate) name: String,
    /// Operand value names.
    pub(crate) operands: Vec<String>,
    /// Attributes and properties, by generic name, with generic-form text.
    pub(crate) attrs: Vec<(String, String)>,
    /// Regions in order, each with its name.
    pub(crate) regions: Vec<(String, Region)>,
    /// Result types.
    pub(crate) types: Vec<Type>,
    /// Raw `loc(...)` body, unresolved.
    pub(crate) loc: Option<String>,
    /// Byte offset of the op in the file (for messages).
    pub(crate) at: usize,
    /// Source text of a pretty form this parser could not read field by field.
    pub(crate) unparsed: Option<String>,
}

/// A single-block region.
#[derive(Clone, Debug, Default)]
pub(crate) struct Region {
    /// Block arguments.
    pub(crate) args: Vec<Arg>,
    /// Operations, the terminator last.
    pub(crate) ops: Vec<Op>,
}

/// A `func.func`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Func {
    /// Symbol name without `@`.
    pub(crate) name: String,
    /// `public` / `private` / `nested`, when written.
    pub(crate) visibility: Option<String>,
    /// Parameters (the entry block's arguments).
    pub(crate) args: Vec<Arg>,
    /// Result types with their attributes.
    pub(crate) results: Vec<(Type, Vec<(String, String)>)>,
    /// Function attributes (`attributes {...}`), verbatim.
    pub(crate) attrs: Vec<(String, String)>,
    /// The body.
    pub(crate) body: Region,
    /// Raw `loc(...)` body.
    pub(crate) loc: Option<String>,
    /// True for a declaration without body.
    pub(crate) external: bool,
    /// Byte offset of the function in the file.
    pub(crate) at: usize,
}

/// A whole file.
#[derive(Clone, Debug, Default)]
pub(crate) struct Module {
    /// `module @name`.
    pub(crate) name: Option<String>,
    /// Module attributes, verbatim.
    pub(crate) attrs: Vec<(String, String)>,
    /// Functions in file order.
    pub(crate) funcs: Vec<Func>,
    /// Other module-level ops (`sdy.mesh`), in generic shape.
    pub(crate) others: Vec<Op>,
    /// Attribute and type aliases other than locations (`#map = ...`), verbatim.
    pub(crate) aliases: Vec<(String, String)>,
    /// `#locN = loc(...)` aliases: name (with `#`) to raw body.
    pub(crate) loc_aliases: HashMap<String, String>,
    /// `{-# dialect_resources: { builtin: { name: "0x..." } } #-}` blobs: name to hex text.
    pub(crate) resources: HashMap<String, String>,
}
