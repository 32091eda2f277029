//! Tensor sets and signatures: what every verb that feeds a model reads its inputs through.
//!
//! - [`read_set`]: a folder of `.npy` / ONNX `.pb` files, an `.npz`, a `.safetensors`, one
//!   `.npy` or one `.pb`, as named tensors in natural order (`arg2` before `arg10`).
//! - [`assign`] and [`bind`]: named tensors to the arguments of a signature ([`Slot`]s). An
//!   entry goes to the argument of its name, else to the one its alias names (`arg3`,
//!   `input_3`, `3` for inputs; `out3`, `output_3`, `3` for outputs); what is left fills the
//!   remaining arguments in order. [`bind`] then checks every dtype and static dimension.
//! - [`SplitMix`] and [`random_tensor`]: seeded inputs drawn from a signature.
//!
//! Problems are [`BindProblem`]s, wrapped by the caller into [`FormatError::Bind`] with the
//! name of the set (a path, or a flag), so a verb can word them for its own flags.

use std::fmt;
use std::path::{Path, PathBuf};

use tpuport_model::{DType, HostTensor};

use crate::{FormatError, Limits};

/// One argument (or result) of a signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Name (graph input name, `arg0`, ...).
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Dimensions; `None` where the signature leaves one dynamic.
    pub dims: Vec<Option<u64>>,
}

impl Slot {
    /// A slot of static shape.
    #[must_use]
    pub fn fixed(name: impl Into<String>, dtype: DType, shape: &[u64]) -> Slot {
        Slot { name: name.into(), dtype, dims: shape.iter().copied().map(Some).collect() }
    }

    /// The static shape, when every dimension is known.
    #[must_use]
    pub fn shape(&self) -> Option<Vec<u64>> {
        self.dims.iter().copied().collect()
    }

    /// Whether `t` fits: same dtype, same rank, every static dimension equal.
    #[must_use]
    pub fn accepts(&self, t: &HostTensor) -> bool {
        t.dtype == self.dtype && self.fits_shape(&t.shape)
    }

    /// Same rank and every static dimension equal.
    #[must_use]
    pub fn fits_shape(&self, shape: &[u64]) -> bool {
        shape.len() == self.dims.len()
            && shape.iter().zip(&self.dims).all(|(g, w)| w.is_none_or(|w| w == *g))
    }

    /// `f32[1, 784]`, with `?` for dynamic dimensions.
    #[must_use]
    pub fn type_string(&self) -> String {
        let d: Vec<String> =
            self.dims.iter().map(|d| d.map_or_else(|| "?".into(), |v| v.to_string())).collect();
        format!("{}[{}]", self.dtype, d.join(", "))
    }
}

/// How an entry names the argument it is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    /// Named by the user: must name an argument (by name or alias).
    Named(String),
    /// Named after its file or archive member: goes to the argument it names, else fills
    /// the next free one.
    Hint(String),
    /// No name: fills the next free argument.
    Position,
}

/// A tensor on its way to an argument.
#[derive(Clone, Debug)]
pub struct Entry {
    /// What it says about its argument.
    pub key: Key,
    /// Where it came from, for messages (a file, a member name).
    pub source: String,
    /// The tensor.
    pub tensor: HostTensor,
}

impl Entry {
    /// An entry named after its file or member.
    #[must_use]
    pub fn hint(name: String, tensor: HostTensor) -> Entry {
        Entry { key: Key::Hint(name.clone()), source: name, tensor }
    }
}

/// Which aliases name the `i`-th slot besides its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// `argN`, `input_N`, `N`.
    Inputs,
    /// `outN`, `output_N`, `N`.
    Outputs,
}

impl Role {
    /// The slot index an alias names, if it is one.
    fn alias(self, name: &str) -> Option<usize> {
        let (a, b) = match self {
            Role::Inputs => ("arg", "input_"),
            Role::Outputs => ("out", "output_"),
        };
        let digits = name.strip_prefix(b).or_else(|| name.strip_prefix(a)).unwrap_or(name);
        if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    }
}

/// Why a set of tensors does not fit a signature (or cannot be generated for it).
#[derive(Clone, Debug, PartialEq)]
pub enum BindProblem {
    /// A [`Key::Named`] entry names no argument.
    UnknownName {
        /// The name given.
        name: String,
        /// The entry's source.
        source: String,
    },
    /// Two entries name the same argument.
    Twice {
        /// Argument index.
        index: usize,
        /// Argument name.
        name: String,
    },
    /// More tensors than arguments.
    LeftOver {
        /// The first entry left over.
        source: String,
        /// Number of arguments.
        takes: usize,
    },
    /// Arguments without a tensor: (index, slot).
    Missing(Vec<(usize, Slot)>),
    /// A tensor whose dtype or shape does not fit its argument.
    Mismatch {
        /// The entry's source.
        source: String,
        /// Argument index.
        index: usize,
        /// The argument.
        slot: Slot,
        /// The tensor's dtype.
        dtype: DType,
        /// The tensor's shape.
        shape: Vec<u64>,
    },
    /// A weight argument whose tensor is missing or unreadable.
    Weight {
        /// Weight name.
        name: String,
        /// Why.
        why: String,
    },
    /// A random tensor cannot be drawn for the argument (dynamic shape, dtype, size).
    CannotGenerate {
        /// The argument.
        slot: Slot,
        /// Why.
        why: String,
    },
}

impl fmt::Display for BindProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindProblem::UnknownName { name, source } => {
                write!(f, "`{source}` is for `{name}`, which names no input")
            }
            BindProblem::Twice { index, name } => write!(f, "input {index} `{name}` given twice"),
            BindProblem::LeftOver { source, takes } => {
                write!(f, "`{source}` is left over: the model takes {takes} input(s)")
            }
            BindProblem::Missing(slots) => {
                let list: Vec<String> = slots
                    .iter()
                    .map(|(i, s)| format!("input {i} `{}` ({})", s.name, s.type_string()))
                    .collect();
                write!(f, "no tensor for {}", list.join(", "))
            }
            BindProblem::Mismatch { source, index, slot, dtype, shape } => write!(
                f,
                "`{source}` for input {index} `{}` is {dtype}{shape:?}, the model expects {}",
                slot.name,
                slot.type_string()
            ),
            BindProblem::Weight { name, why } => write!(f, "weight `{name}`: {why}"),
            BindProblem::CannotGenerate { slot, why } => {
                write!(f, "input `{}` ({}): {why}", slot.name, slot.type_string())
            }
        }
    }
}

/// Entries placed on slots: `slots[i]` is argument `i`'s, `rest` what fits nowhere.
#[derive(Debug)]
pub struct Assignment {
    /// One entry (or none) per slot.
    pub slots: Vec<Option<Entry>>,
    /// Entries left over, in order.
    pub rest: Vec<Entry>,
}

/// The slot `name` names among `names`: by name, else by alias (`arg3`, `input_3`, `3` for
/// inputs; `out3`, `output_3`, `3` for outputs).
#[must_use]
pub fn resolve(names: &[&str], name: &str, role: Role) -> Option<usize> {
    names.iter().position(|s| *s == name).or_else(|| role.alias(name).filter(|&i| i < names.len()))
}

/// Places entries on the slots named `names`: by name, then by alias, then in order.
///
/// # Errors
/// [`BindProblem::UnknownName`] and [`BindProblem::Twice`] for [`Key::Named`] entries.
pub fn assign(entries: Vec<Entry>, names: &[&str], role: Role) -> Result<Assignment, BindProblem> {
    let mut slots: Vec<Option<Entry>> = (0..names.len()).map(|_| None).collect();
    let mut unplaced = Vec::new();
    for e in entries {
        let name = match &e.key {
            Key::Named(n) | Key::Hint(n) => n.clone(),
            Key::Position => {
                unplaced.push(e);
                continue;
            }
        };
        let target = resolve(names, &name, role);
        match (target, &e.key) {
            (Some(i), _) if slots[i].is_none() => slots[i] = Some(e),
            (Some(i), Key::Named(_)) => {
                return Err(BindProblem::Twice { index: i, name: names[i].to_owned() });
            }
            (None, Key::Named(_)) => {
                return Err(BindProblem::UnknownName { name, source: e.source });
            }
            _ => unplaced.push(e),
        }
    }
    let mut rest = unplaced.into_iter();
    for s in &mut slots {
        if s.is_none() {
            *s = rest.next();
        }
    }
    Ok(Assignment { slots, rest: rest.collect() })
}

/// Binds entries to a signature and checks them: every argument gets exactly one tensor of
/// its dtype and static dimensions. A `u16` tensor for a `bf16` argument of the same shape is
/// taken as bf16 bit patterns (NumPy has no bf16; JAX tooling stores it so).
///
/// # Errors
/// The first [`BindProblem`]: unknown or repeated names, a tensor left over, arguments
/// without a tensor, then the first argument whose tensor does not fit.
pub fn bind(entries: Vec<Entry>, sig: &[Slot]) -> Result<Vec<HostTensor>, BindProblem> {
    Ok(bind_entries(entries, sig)?.into_iter().map(|e| e.tensor).collect())
}

/// [`bind`], keeping each tensor's entry (its source, for messages), in argument order.
///
/// # Errors
/// As [`bind`].
pub fn bind_entries(entries: Vec<Entry>, sig: &[Slot]) -> Result<Vec<Entry>, BindProblem> {
    let names: Vec<&str> = sig.iter().map(|s| s.name.as_str()).collect();
    let a = assign(entries, &names, Role::Inputs)?;
    if let Some(extra) = a.rest.into_iter().next() {
        return Err(BindProblem::LeftOver { source: extra.source, takes: sig.len() });
    }
    let missing: Vec<(usize, Slot)> = a
        .slots
        .iter()
        .enumerate()
        .filter(|(_, e)| e.is_none())
        .map(|(i, _)| (i, sig[i].clone()))
        .collect();
    if !missing.is_empty() {
        return Err(BindProblem::Missing(missing));
    }
    let mut out = Vec::with_capacity(sig.len());
    for (i, (slot, e)) in sig.iter().zip(a.slots.into_iter().flatten()).enumerate() {
        let mut t = e.tensor;
        if slot.dtype == DType::BF16 && t.dtype == DType::U16 && slot.fits_shape(&t.shape) {
            // same width: the length check cannot fail
            let shape = t.shape.clone();
            t = HostTensor::new(DType::BF16, shape.clone(), t.into_data()).map_err(|_| {
                BindProblem::Mismatch {
                    source: e.source.clone(),
                    index: i,
                    slot: slot.clone(),
                    dtype: DType::U16,
                    shape,
                }
            })?;
        }
        if !slot.accepts(&t) {
            return Err(BindProblem::Mismatch {
                source: e.source,
                index: i,
                slot: slot.clone(),
                dtype: t.dtype,
                shape: t.shape,
            });
        }
        out.push(Entry { tensor: t, ..e });
    }
    Ok(out)
}

/// Reads a tensor set: a folder of `.npy` and `.pb` files, an `.npz`, a `.safetensors`, one
/// `.npy` or one `.pb`, named by file stem or member name and sorted by [`natural_key`].
///
/// In a folder, files whose stem starts with `skip` are left out (an ONNX
/// `test_data_set_N` folder holds `input_N.pb` and `output_N.pb` side by side).
///
/// # Errors
/// [`FormatError::Io`] for a missing path, [`FormatError::UnknownFormat`] for another kind of
/// file, or the reader's error naming the file.
pub fn read_set(
    path: &Path,
    skip: Option<&str>,
    limits: &Limits,
) -> Result<Vec<(String, HostTensor)>, FormatError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    let stem = |p: &Path| p.file_stem().and_then(|s| s.to_str()).unwrap_or("").to_owned();
    let mut out = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| FormatError::io(path, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "npy" || e == "pb"))
            .filter(|p| skip.is_none_or(|k| !stem(p).starts_with(k)))
            .collect();
        files.sort();
        let mut v = Vec::with_capacity(files.len());
        for f in files {
            v.push((stem(&f), read_one(&f, limits)?));
        }
        v
    } else if ext == "npz" {
        crate::npy::read_npz(path)?
    } else if ext == "npy" || ext == "pb" {
        vec![(stem(path), read_one(path, limits)?)]
    } else if ext == "safetensors" {
        let m = crate::safetensors::import_file(path, limits)?;
        let mut v = Vec::with_capacity(m.weights.len());
        for w in m.weights.iter() {
            v.push((
                w.name.clone(),
                w.to_host().map_err(|e| FormatError::invalid(path, e.to_string()))?,
            ));
        }
        v
    } else if !path.exists() {
        return Err(FormatError::io(path, std::io::ErrorKind::NotFound.into()));
    } else {
        return Err(FormatError::UnknownFormat {
            path: path.to_owned(),
            hint: "expected a directory of .npy or .pb files, an .npz, a .safetensors, an .npy \
                   or a .pb"
                .to_owned(),
        });
    };
    out.sort_by_key(|x| natural_key(&x.0));
    Ok(out)
}

fn read_one(path: &Path, limits: &Limits) -> Result<HostTensor, FormatError> {
    if path.extension().is_some_and(|e| e == "pb") {
        crate::onnx::read_tensor_pb(path, limits)
    } else {
        crate::npy::read_npy(path)
    }
}

/// Sort key that orders `arg2` before `arg10`: the text before the trailing digits, then
/// their value.
#[must_use]
pub fn natural_key(s: &str) -> (String, u64) {
    let head = s.trim_end_matches(|c: char| c.is_ascii_digit());
    (head.to_owned(), s[head.len()..].parse().unwrap_or(0))
}

/// splitmix64: the seeded generator behind `--random` and `bench`'s default inputs.
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    pub fn unit(&mut self) -> f64 {
        #[allow(clippy::cast_precision_loss, reason = "53-bit mantissa by construction")]
        let u = ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        u
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// Largest tensor [`random_tensor`] draws, in elements.
pub const RANDOM_MAX_ELEMENTS: u64 = 1 << 28;

/// A random tensor for a slot of static shape: floats ~ N(0, 1), integers in [0, 16),
/// booleans fair.
///
/// # Errors
/// [`BindProblem::CannotGenerate`] for a dynamic shape, a dtype without a draw (f8, 4-bit,
/// complex, string), or more than [`RANDOM_MAX_ELEMENTS`] elements.
pub fn random_tensor(slot: &Slot, rng: &mut SplitMix) -> Result<HostTensor, BindProblem> {
    let cannot = |why: String| BindProblem::CannotGenerate { slot: slot.clone(), why };
    let shape = slot.shape().ok_or_else(|| cannot("dynamic shape".to_owned()))?;
    let n = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).unwrap_or(u64::MAX);
    if n > RANDOM_MAX_ELEMENTS {
        return Err(cannot(format!("{n} elements: too large to generate")));
    }
    let width = match slot.dtype {
        DType::F64 | DType::I64 | DType::U64 => 8,
        DType::F32 | DType::I32 | DType::U32 => 4,
        DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
        DType::I8 | DType::U8 | DType::Bool => 1,
        d => return Err(cannot(format!("cannot generate {d} values"))),
    };
    #[allow(clippy::cast_possible_truncation, reason = "n <= RANDOM_MAX_ELEMENTS")]
    let mut data = Vec::with_capacity(n as usize * width);
    for _ in 0..n {
        match slot.dtype {
            #[allow(clippy::cast_possible_truncation, reason = "f32 draw")]
            DType::F32 => data.extend((rng.normal() as f32).to_le_bytes()),
            DType::F64 => data.extend(rng.normal().to_le_bytes()),
            DType::BF16 => data.extend(half::bf16::from_f64(rng.normal()).to_le_bytes()),
            DType::F16 => data.extend(half::f16::from_f64(rng.normal()).to_le_bytes()),
            DType::Bool => data.push(u8::from(rng.next_u64() & 1 == 1)),
            _ => data.extend_from_slice(&(rng.next_u64() % 16).to_le_bytes()[..width]),
        }
    }
    HostTensor::new(slot.dtype, shape, data).map_err(|e| cannot(e.to_string()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    fn t(shape: &[u64]) -> HostTensor {
        let n = shape.iter().product::<u64>() as usize;
        HostTensor::from_f32(shape.to_vec(), &vec![0.5; n]).unwrap()
    }

    fn sig() -> Vec<Slot> {
        vec![Slot::fixed("x", DType::F32, &[2, 3]), Slot::fixed("y", DType::F32, &[4])]
    }

    #[test]
    fn natural_order() {
        let mut v = vec!["arg10", "arg2", "arg1", "b", "a"];
        v.sort_by_key(|s| natural_key(s));
        assert_eq!(v, ["a", "arg1", "arg2", "arg10", "b"]);
    }

    #[test]
    fn binds_by_name_alias_and_order() {
        // by name, in any order
        let e = vec![Entry::hint("y".into(), t(&[4])), Entry::hint("x".into(), t(&[2, 3]))];
        let b = bind(e, &sig()).unwrap();
        assert_eq!(b[0].shape, [2, 3]);
        // aliases of both kinds, then order
        for names in [["arg1", "arg0"], ["input_1", "input_0"], ["1", "0"]] {
            let e = vec![
                Entry::hint(names[0].into(), t(&[4])),
                Entry::hint(names[1].into(), t(&[2, 3])),
            ];
            assert_eq!(bind(e, &sig()).unwrap()[1].shape, [4], "{names:?}");
        }
        let e = vec![Entry::hint("a".into(), t(&[2, 3])), Entry::hint("b".into(), t(&[4]))];
        assert!(bind(e, &sig()).is_ok());
        // a positional entry fills what the named ones leave
        let e = vec![
            Entry { key: Key::Position, source: "p.npy".into(), tensor: t(&[2, 3]) },
            Entry { key: Key::Named("y".into()), source: "q.npy".into(), tensor: t(&[4]) },
        ];
        assert!(bind(e, &sig()).is_ok());
    }

    #[test]
    fn problems_name_the_input() {
        let e = vec![Entry::hint("x".into(), t(&[2, 3]))];
        let p = bind(e, &sig()).unwrap_err();
        assert_eq!(p.to_string(), "no tensor for input 1 `y` (f32[4])");
        let e = vec![Entry::hint("x".into(), t(&[2, 3])), Entry::hint("y".into(), t(&[5]))];
        let p = bind(e, &sig()).unwrap_err();
        assert_eq!(p.to_string(), "`y` for input 1 `y` is f32[5], the model expects f32[4]");
        let e = (0..3).map(|i| Entry::hint(format!("t{i}"), t(&[4]))).collect();
        assert!(matches!(bind(e, &sig()), Err(BindProblem::LeftOver { takes: 2, .. })));
        let named =
            |n: &str| Entry { key: Key::Named(n.into()), source: "f".into(), tensor: t(&[4]) };
        assert!(matches!(bind(vec![named("nope")], &sig()), Err(BindProblem::UnknownName { .. })));
        assert!(matches!(
            bind(vec![named("y"), named("arg1")], &sig()),
            Err(BindProblem::Twice { index: 1, .. })
        ));
    }

    #[test]
    fn dynamic_dims_and_bf16_bit_patterns() {
        let dynamic = [Slot { name: "x".into(), dtype: DType::F32, dims: vec![None, Some(3)] }];
        assert!(bind(vec![Entry::hint("x".into(), t(&[7, 3]))], &dynamic).is_ok());
        assert_eq!(dynamic[0].type_string(), "f32[?, 3]");
        let bf = [Slot::fixed("w", DType::BF16, &[2])];
        let bits = HostTensor::new(DType::U16, vec![2], vec![0x80, 0x3f, 0, 0x40]).unwrap();
        let b = bind(vec![Entry::hint("w".into(), bits)], &bf).unwrap();
        assert_eq!(b[0].to_f64().unwrap(), vec![1.0, 2.0]);
    }

    #[test]
    fn random_is_seeded_and_bounded() {
        let s = Slot::fixed("x", DType::I64, &[64]);
        let a = random_tensor(&s, &mut SplitMix(3)).unwrap();
        assert_eq!(a, random_tensor(&s, &mut SplitMix(3)).unwrap());
        assert_ne!(a, random_tensor(&s, &mut SplitMix(4)).unwrap());
        assert!(a.to_f64().unwrap().iter().all(|v| (0.0..16.0).contains(v)));
        let f = random_tensor(&Slot::fixed("f", DType::F32, &[4096]), &mut SplitMix(1)).unwrap();
        let v = f.to_f64().unwrap();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
        assert!(mean.abs() < 0.1 && (var - 1.0).abs() < 0.1, "{mean} {var}");
        let huge = Slot::fixed("h", DType::F32, &[1 << 20, 1 << 20]);
        assert!(matches!(
            random_tensor(&huge, &mut SplitMix(0)),
            Err(BindProblem::CannotGenerate { .. })
        ));
        let dynamic = Slot { name: "d".into(), dtype: DType::F32, dims: vec![None] };
        assert!(random_tensor(&dynamic, &mut SplitMix(0)).is_err());
        assert!(random_tensor(&Slot::fixed("c", DType::C64, &[1]), &mut SplitMix(0)).is_err());
    }
}
