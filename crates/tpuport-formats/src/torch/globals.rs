//! Which pickle globals a checkpoint may name.
//!
//! The allow-list is what `torch.save` writes for tensors and state dicts (checked against
//! torch 2.x output and the globals `torch.load(weights_only=True)` accepts): the
//! `torch._utils._rebuild_*` functions, storage type names, dtype names, `torch.Size`,
//! `torch.device`, `collections.OrderedDict`, and the few builtins protocol 2 needs to spell
//! bytes and sets. Nothing on the list is ever called; the list only decides which names are
//! legitimate. Everything else is refused. Known code-execution entry points (`os.system`,
//! `builtins.eval`, `subprocess.Popen`, …) are classified [`GlobalClass::Dangerous`]; other
//! names (a user's `__main__.Net`, numpy reconstructors) are [`GlobalClass::Unknown`].

use serde::Serialize;

use tpuport_model::DType;

/// How a pickle global is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GlobalClass {
    /// On the tensor allow-list.
    Allowed,
    /// Not on the list and not known to be dangerous (custom classes, numpy reconstructors).
    Unknown,
    /// A known way to run code, spawn processes, touch files or the network.
    Dangerous,
}

/// The module spelling Python 3 uses (protocol 2 writes `__builtin__` and `copy_reg`).
pub(crate) fn normalize_module(module: &str) -> &str {
    match module {
        "__builtin__" | "__builtins__" => "builtins",
        "copy_reg" => "copyreg",
        m => m,
    }
}

const TORCH_REBUILD: &[&str] = &[
    "_rebuild_tensor",
    "_rebuild_tensor_v2",
    "_rebuild_tensor_v3",
    "_rebuild_parameter",
    "_rebuild_parameter_with_state",
    "_rebuild_qtensor",
    "_rebuild_sparse_tensor",
    "_rebuild_meta_tensor_no_storage",
    "_rebuild_wrapper_subclass",
    "_rebuild_device_tensor_from_cpu_tensor",
    "_rebuild_device_tensor_from_numpy",
];

/// Legacy typed storage classes and their element types (`None`: quantized, no neutral dtype).
pub(crate) const STORAGE_TYPES: &[(&str, Option<DType>)] = &[
    ("DoubleStorage", Some(DType::F64)),
    ("FloatStorage", Some(DType::F32)),
    ("HalfStorage", Some(DType::F16)),
    ("BFloat16Storage", Some(DType::BF16)),
    ("LongStorage", Some(DType::I64)),
    ("IntStorage", Some(DType::I32)),
    ("ShortStorage", Some(DType::I16)),
    ("CharStorage", Some(DType::I8)),
    ("ByteStorage", Some(DType::U8)),
    ("BoolStorage", Some(DType::Bool)),
    ("ComplexFloatStorage", Some(DType::C64)),
    ("ComplexDoubleStorage", Some(DType::C128)),
    ("QInt8Storage", None),
    ("QInt32Storage", None),
    ("QUInt8Storage", None),
    ("QUInt4x2Storage", None),
    ("QUInt2x4Storage", None),
];

/// `torch.<name>` dtype objects and their element types (`None`: no neutral dtype).
pub(crate) const TORCH_DTYPES: &[(&str, Option<DType>)] = &[
    ("float64", Some(DType::F64)),
    ("double", Some(DType::F64)),
    ("float32", Some(DType::F32)),
    ("float", Some(DType::F32)),
    ("float16", Some(DType::F16)),
    ("half", Some(DType::F16)),
    ("bfloat16", Some(DType::BF16)),
    ("float8_e4m3fn", Some(DType::F8E4M3FN)),
    ("float8_e5m2", Some(DType::F8E5M2)),
    ("float8_e4m3fnuz", Some(DType::F8E4M3FNUZ)),
    ("float8_e5m2fnuz", Some(DType::F8E5M2FNUZ)),
    ("int64", Some(DType::I64)),
    ("long", Some(DType::I64)),
    ("int32", Some(DType::I32)),
    ("int", Some(DType::I32)),
    ("int16", Some(DType::I16)),
    ("short", Some(DType::I16)),
    ("int8", Some(DType::I8)),
    ("uint64", Some(DType::U64)),
    ("uint32", Some(DType::U32)),
    ("uint16", Some(DType::U16)),
    ("uint8", Some(DType::U8)),
    ("bool", Some(DType::Bool)),
    ("complex64", Some(DType::C64)),
    ("cfloat", Some(DType::C64)),
    ("complex128", Some(DType::C128)),
    ("cdouble", Some(DType::C128)),
    ("complex32", None),
    ("chalf", None),
    ("bcomplex32", None),
    ("float8_e8m0fnu", None),
    ("float4_e2m1fn_x2", None),
    ("qint8", None),
    ("qint32", None),
    ("quint8", None),
    ("quint4x2", None),
    ("quint2x4", None),
    ("bits8", None),
    ("bits16", None),
    ("bits1x8", None),
    ("bits2x4", None),
    ("bits4x2", None),
    ("int1", None),
    ("int2", None),
    ("int3", None),
    ("int4", None),
    ("int5", None),
    ("int6", None),
    ("int7", None),
    ("uint1", None),
    ("uint2", None),
    ("uint3", None),
    ("uint4", None),
    ("uint5", None),
    ("uint6", None),
    ("uint7", None),
    ("per_tensor_affine", None),
    ("per_tensor_symmetric", None),
    ("per_channel_affine", None),
    ("per_channel_symmetric", None),
    ("per_channel_affine_float_qparams", None),
];

const TENSOR_CLASSES: &[&str] = &[
    "Tensor",
    "DoubleTensor",
    "FloatTensor",
    "HalfTensor",
    "BFloat16Tensor",
    "LongTensor",
    "IntTensor",
    "ShortTensor",
    "CharTensor",
    "ByteTensor",
    "BoolTensor",
];

/// Modules whose every attribute can run code or reach the system.
const DANGEROUS_MODULES: &[&str] = &[
    "os",
    "posix",
    "nt",
    "posixpath",
    "ntpath",
    "subprocess",
    "_posixsubprocess",
    "_winapi",
    "sys",
    "pty",
    "commands",
    "popen2",
    "platform",
    "socket",
    "shutil",
    "runpy",
    "code",
    "codeop",
    "importlib",
    "imp",
    "pkgutil",
    "zipimport",
    "webbrowser",
    "httplib",
    "http",
    "urllib",
    "urllib2",
    "requests",
    "ftplib",
    "smtplib",
    "telnetlib",
    "pickle",
    "_pickle",
    "cPickle",
    "marshal",
    "shelve",
    "dill",
    "ctypes",
    "cffi",
    "multiprocessing",
    "asyncio",
    "threading",
    "_thread",
    "signal",
    "pdb",
    "bdb",
    "pydoc",
    "timeit",
    "cProfile",
    "profile",
    "trace",
    "tempfile",
    "glob",
    "io",
    "_io",
    "fileinput",
    "linecache",
    "gc",
    "inspect",
    "types",
];

/// Single callables that run code or reach the system.
const DANGEROUS_NAMES: &[(&str, &str)] = &[
    ("builtins", "eval"),
    ("builtins", "exec"),
    ("builtins", "execfile"),
    ("builtins", "compile"),
    ("builtins", "open"),
    ("builtins", "file"),
    ("builtins", "__import__"),
    ("builtins", "getattr"),
    ("builtins", "setattr"),
    ("builtins", "delattr"),
    ("builtins", "globals"),
    ("builtins", "locals"),
    ("builtins", "vars"),
    ("builtins", "apply"),
    ("builtins", "input"),
    ("builtins", "breakpoint"),
    ("builtins", "help"),
    ("builtins", "exit"),
    ("builtins", "quit"),
    ("operator", "attrgetter"),
    ("operator", "methodcaller"),
    ("operator", "itemgetter"),
    ("functools", "partial"),
    ("functools", "reduce"),
    ("copyreg", "_reconstructor"),
    ("numpy.testing._private.utils", "runstring"),
    ("torch.serialization", "load"),
    ("torch", "load"),
    ("torch.hub", "load"),
    ("torch.jit", "load"),
    ("torch._inductor.codecache", "compile_file"),
    ("torch.utils.cpp_extension", "load_inline"),
    ("logging.config", "listen"),
    ("logging.config", "dictConfig"),
];

/// Judges one global. `module` may use the protocol-2 spelling.
#[must_use]
pub(crate) fn classify(module: &str, name: &str) -> GlobalClass {
    let m = normalize_module(module);
    if is_allowed(m, name) {
        return GlobalClass::Allowed;
    }
    let top = m.split('.').next().unwrap_or(m);
    if DANGEROUS_MODULES.contains(&m)
        || DANGEROUS_MODULES.contains(&top)
        || DANGEROUS_NAMES.contains(&(m, name))
    {
        return GlobalClass::Dangerous;
    }
    GlobalClass::Unknown
}

fn is_allowed(m: &str, name: &str) -> bool {
    match m {
        "torch._utils" => TORCH_REBUILD.contains(&name),
        "torch._tensor" => name == "_rebuild_from_type_v2",
        "torch" => {
            STORAGE_TYPES.iter().any(|(n, _)| *n == name)
                || TORCH_DTYPES.iter().any(|(n, _)| *n == name)
                || TENSOR_CLASSES.contains(&name)
                || matches!(name, "Size" | "device")
        }
        "torch.storage" => matches!(name, "UntypedStorage" | "TypedStorage"),
        "torch.cuda" => STORAGE_TYPES.iter().any(|(n, _)| *n == name),
        "torch.nn.parameter" => name == "Parameter",
        "torch.serialization" => name == "_get_layout",
        "collections" => matches!(name, "OrderedDict" | "Counter"),
        "_codecs" => name == "encode",
        "builtins" => matches!(name, "set" | "frozenset" | "bytearray" | "complex" | "slice"),
        _ => false,
    }
}

/// The element type a storage class name stands for.
pub(crate) fn storage_dtype(name: &str) -> Option<Option<DType>> {
    STORAGE_TYPES.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
}

/// The element type a `torch.<dtype>` global stands for.
pub(crate) fn torch_dtype(name: &str) -> Option<Option<DType>> {
    TORCH_DTYPES.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(classify("torch._utils", "_rebuild_tensor_v2"), GlobalClass::Allowed);
        assert_eq!(classify("torch", "BFloat16Storage"), GlobalClass::Allowed);
        assert_eq!(classify("__builtin__", "set"), GlobalClass::Allowed);
        assert_eq!(classify("os", "system"), GlobalClass::Dangerous);
        assert_eq!(classify("posix", "system"), GlobalClass::Dangerous);
        assert_eq!(classify("nt", "system"), GlobalClass::Dangerous);
        assert_eq!(classify("__builtin__", "exec"), GlobalClass::Dangerous);
        assert_eq!(classify("builtins", "eval"), GlobalClass::Dangerous);
        assert_eq!(classify("subprocess", "Popen"), GlobalClass::Dangerous);
        assert_eq!(classify("runpy", "_run_code"), GlobalClass::Dangerous);
        assert_eq!(classify("webbrowser", "open"), GlobalClass::Dangerous);
        assert_eq!(classify("__main__", "Net"), GlobalClass::Unknown);
        assert_eq!(classify("torch", "load"), GlobalClass::Dangerous);
        assert_eq!(classify("torch", "system"), GlobalClass::Unknown);
    }
}
