//! Typed key-value pairs (`PJRT_NamedValue`), both directions.
//!
//! Types are exact: the CPU plugin reads `cpu_device_count` with `std::get<int64_t>` and a
//! string there throws a C++ exception through the C ABI (process abort). Callers build
//! values with the typed constructors; nothing converts between types implicitly.

use std::ffi::c_char;

use serde::Serialize;

use crate::sys;

/// A value of a named value.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Value {
    /// `kString`.
    Str(String),
    /// `kInt64`.
    Int64(i64),
    /// `kInt64List`.
    Int64List(Vec<i64>),
    /// `kFloat`.
    Float(f32),
    /// `kBool`.
    Bool(bool),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Str(s) => f.write_str(s),
            Value::Int64(v) => write!(f, "{v}"),
            Value::Int64List(v) => {
                let parts: Vec<String> = v.iter().map(ToString::to_string).collect();
                write!(f, "[{}]", parts.join(", "))
            }
            Value::Float(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{v}"),
        }
    }
}

/// A name with a typed value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NamedValue {
    /// Key.
    pub name: String,
    /// Value.
    pub value: Value,
}

impl NamedValue {
    /// An int64 value.
    #[must_use]
    pub fn int64(name: &str, v: i64) -> NamedValue {
        NamedValue { name: name.to_owned(), value: Value::Int64(v) }
    }
    /// A string value.
    #[must_use]
    pub fn string(name: &str, v: &str) -> NamedValue {
        NamedValue { name: name.to_owned(), value: Value::Str(v.to_owned()) }
    }
    /// A bool value.
    #[must_use]
    pub fn bool(name: &str, v: bool) -> NamedValue {
        NamedValue { name: name.to_owned(), value: Value::Bool(v) }
    }
}

/// Looks up a value by name.
#[must_use]
pub fn find<'a>(values: &'a [NamedValue], name: &str) -> Option<&'a Value> {
    values.iter().find(|v| v.name == name).map(|v| &v.value)
}

/// The C view of a slice of [`NamedValue`]s; borrows the names and values it points into.
pub(crate) struct RawNamedValues<'a> {
    raw: Vec<sys::PJRT_NamedValue>,
    _src: std::marker::PhantomData<&'a [NamedValue]>,
}

impl<'a> RawNamedValues<'a> {
    pub(crate) fn new(values: &'a [NamedValue]) -> Self {
        let raw = values
            .iter()
            .map(|v| {
                let (ty, val, size) = match &v.value {
                    Value::Str(s) => (
                        sys::PJRT_NamedValue_kString,
                        sys::PJRT_NamedValue_Union { string_value: s.as_ptr().cast::<c_char>() },
                        s.len(),
                    ),
                    Value::Int64(i) => (
                        sys::PJRT_NamedValue_kInt64,
                        sys::PJRT_NamedValue_Union { int64_value: *i },
                        1,
                    ),
                    Value::Int64List(l) => (
                        sys::PJRT_NamedValue_kInt64List,
                        sys::PJRT_NamedValue_Union { int64_array_value: l.as_ptr() },
                        l.len(),
                    ),
                    Value::Float(x) => (
                        sys::PJRT_NamedValue_kFloat,
                        sys::PJRT_NamedValue_Union { float_value: *x },
                        1,
                    ),
                    Value::Bool(b) => (
                        sys::PJRT_NamedValue_kBool,
                        sys::PJRT_NamedValue_Union { bool_value: *b },
                        1,
                    ),
                };
                sys::PJRT_NamedValue::new(
                    v.name.as_ptr().cast::<c_char>(),
                    v.name.len(),
                    ty,
                    val,
                    size,
                )
            })
            .collect();
        RawNamedValues { raw, _src: std::marker::PhantomData }
    }

    pub(crate) fn as_ptr(&self) -> *const sys::PJRT_NamedValue {
        if self.raw.is_empty() { std::ptr::null() } else { self.raw.as_ptr() }
    }

    pub(crate) fn len(&self) -> usize {
        self.raw.len()
    }
}

/// Copies a plugin-owned array of named values. Entries of a type this header does not know
/// are skipped.
///
/// # Safety
/// When non-null, `ptr` must point to `n` valid `PJRT_NamedValue`s whose strings and arrays
/// are valid for their stated sizes.
pub(crate) unsafe fn read_all(ptr: *const sys::PJRT_NamedValue, n: usize) -> Vec<NamedValue> {
    if ptr.is_null() {
        return Vec::new();
    }
    // SAFETY: per the contract, `n` valid structs.
    let items = unsafe { std::slice::from_raw_parts(ptr, n) };
    let mut out = Vec::with_capacity(n);
    for it in items {
        // SAFETY: name valid for `name_size` bytes; the union member read is the one `type_`
        // names, and arrays/strings are valid for `value_size` elements.
        let (name, value) = unsafe {
            let name = crate::util::lossy(it.name, it.name_size);
            let value = match it.type_ {
                sys::PJRT_NamedValue_kString => {
                    Value::Str(crate::util::lossy(it.value.string_value, it.value_size))
                }
                sys::PJRT_NamedValue_kInt64 => Value::Int64(it.value.int64_value),
                sys::PJRT_NamedValue_kInt64List => {
                    Value::Int64List(crate::util::to_vec(it.value.int64_array_value, it.value_size))
                }
                sys::PJRT_NamedValue_kFloat => Value::Float(it.value.float_value),
                sys::PJRT_NamedValue_kBool => Value::Bool(it.value.bool_value),
                _ => continue,
            };
            (name, value)
        };
        out.push(NamedValue { name, value });
    }
    out
}
