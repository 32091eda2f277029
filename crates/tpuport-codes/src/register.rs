//! Registering a rule: its struct with the doc comment captured
//! ([`documented!`](crate::documented)), and, for registries of table rows, the row
//! ([`CodeInfo`]) and the table that declares them ([`code_table!`](crate::code_table)).

use crate::Severity;
use crate::pages::{Fact, Registry, StableCode};

/// A type whose doc comment was captured by [`documented!`](crate::documented).
pub trait Documented {
    /// The doc comment, one `#[doc]` line per line (Markdown after [`crate::clean`]).
    const DOC: &'static str;
}

/// Declares a rule's struct and captures its doc comment as [`Documented::DOC`].
///
/// Doc comments are `#[doc = "..."]` attributes, which `macro_rules!` can match, so the rule's
/// documentation lives in exactly one place: above the struct. A unit struct derives `Debug,
/// Clone, Copy`; a struct with fields (a lint violation's message parts) `Debug, Clone`.
///
/// ```
/// tpuport_codes::documented! {
///     /// ## What it finds
///     /// Everything.
///     pub struct Everything;
/// }
/// use tpuport_codes::Documented;
/// assert_eq!(Everything::DOC, " ## What it finds\n Everything.\n");
/// ```
#[macro_export]
macro_rules! documented {
    (
        $(#[doc = $doc:literal])*
        $vis:vis struct $name:ident;
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, Copy)]
        $vis struct $name;

        impl $crate::Documented for $name {
            const DOC: &'static str = concat!($($doc, "\n"),*);
        }
    };
    (
        $(#[doc = $doc:literal])*
        $vis:vis struct $name:ident { $($fvis:vis $field:ident : $ty:ty),* $(,)? }
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone)]
        $vis struct $name { $($fvis $field: $ty),* }

        impl $crate::Documented for $name {
            const DOC: &'static str = concat!($($doc, "\n"),*);
        }
    };
}

/// One code of a registry whose codes are table rows with a default severity (audit, profile).
#[derive(Debug)]
pub struct CodeInfo<T: Table> {
    /// Stable code (`AUD101`).
    pub code: &'static str,
    /// Kebab-case name (`data-dependent-shape`).
    pub name: &'static str,
    /// Default severity.
    pub severity: Severity,
    /// The file that defines the rule, relative to the repository root.
    pub source: &'static str,
    /// The rule's captured doc comment ([`Documented::DOC`]); read it through
    /// [`StableCode::doc`].
    pub raw_doc: &'static str,
    /// What the registry adds to each code (profile: the `check` rules that find the same
    /// problem; audit: nothing).
    pub extra: T::Extra,
}

// By hand: a derive would ask `T: Clone` of the registry's marker type.
impl<T: Table> Clone for CodeInfo<T>
where
    T::Extra: Copy,
{
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Table> Copy for CodeInfo<T> where T::Extra: Copy {}

/// A registry of [`CodeInfo`] rows: what it adds to the kernel.
pub trait Table: Sized + 'static {
    /// What each row carries besides the common facts (`()` for none).
    type Extra: 'static;
    /// The registry's description.
    fn registry() -> &'static Registry;
    /// Every row, in code order (the `CODES` of [`code_table!`](crate::code_table)).
    fn rows() -> &'static [CodeInfo<Self>];
    /// The facts a code's page shows after its family (start with [`Fact::severity`]).
    fn facts(row: &CodeInfo<Self>) -> Vec<Fact>;
}

impl<T: Table> StableCode for CodeInfo<T> {
    fn registry() -> &'static Registry {
        T::registry()
    }
    fn all() -> &'static [Self] {
        T::rows()
    }
    fn code(&self) -> &'static str {
        self.code
    }
    fn name(&self) -> String {
        self.name.to_owned()
    }
    fn source(&self) -> &'static str {
        self.source
    }
    fn raw_doc(&self) -> &'static str {
        self.raw_doc
    }
    fn facts(&self) -> Vec<Fact> {
        T::facts(self)
    }
}

/// Declares a registry's rule modules and two statics from one table, one row per rule:
/// `CODES: &[CodeInfo<TABLE>]` (for [`Table::rows`]) and `CHECKS: &[CHECK_FN]`, the rules'
/// checks in the same order (for [`enabled`]). The head names the table, the folder of the rule
/// files and the domain's check trait with its function type: `check: Rule => fn(&Ctx<'_>, &mut
/// Sink<'_>);`.
///
/// Each row is `"CODE", Severity, module::Struct, "kebab-name" [, extra];` — the struct is
/// declared with [`documented!`](crate::documented) in `module` (a file in `dir`, which becomes
/// the code's source path) and implements the domain's check trait, whose function is `check`.
/// `extra` is [`Table::Extra`] (omitted: `()`).
#[macro_export]
macro_rules! code_table {
    (@extra) => { () };
    (@extra $extra:expr) => { $extra };
    (
        table: $table:ty,
        dir: $dir:literal,
        check: $check:path => $check_fn:ty;
        $( $code:literal, $sev:ident, $module:ident :: $ty:ident, $name:literal $(, $extra:expr)?; )*
    ) => {
        $( mod $module; )*

        static CODES: &[$crate::CodeInfo<$table>] = &[
            $( $crate::CodeInfo {
                code: $code,
                name: $name,
                severity: $crate::Severity::$sev,
                source: concat!($dir, "/", stringify!($module), ".rs"),
                raw_doc: <$module::$ty as $crate::Documented>::DOC,
                extra: $crate::code_table!(@extra $($extra)?),
            }, )*
        ];

        static CHECKS: &[$check_fn] = &[ $( <$module::$ty as $check>::check, )* ];
    };
}

/// The rows of `T` with their checks (`checks` in row order: the `CHECKS` of
/// [`code_table!`](crate::code_table)), less the codes `ignore` names: codes or code prefixes
/// (`AUD401`, `AUD4`), case-insensitive.
pub fn enabled<'a, T: Table, C>(
    checks: &'a [C],
    ignore: &'a [String],
) -> impl Iterator<Item = (&'static CodeInfo<T>, &'a C)> + 'a {
    T::rows().iter().zip(checks).filter(|(row, _)| {
        !ignore.iter().any(|p| {
            !p.is_empty() && row.code.get(..p.len()).is_some_and(|h| h.eq_ignore_ascii_case(p))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    mod finds_x {
        crate::documented! {
            /// ## What it finds
            /// An `x`. More.
            pub(super) struct FindsX;
        }
        impl super::Check for FindsX {
            fn check(out: &mut Vec<&'static str>) {
                out.push("x");
            }
        }
    }
    mod finds_y {
        crate::documented! {
            /// ## What it finds
            /// A `y`.
            pub(super) struct FindsY { pub(super) what: String }
        }
        impl super::Check for FindsY {
            fn check(out: &mut Vec<&'static str>) {
                out.push("y");
            }
        }
    }

    trait Check {
        fn check(out: &mut Vec<&'static str>);
    }

    #[derive(Debug)]
    struct Test;

    impl Table for Test {
        type Extra = u8;
        fn registry() -> &'static Registry {
            &crate::pages::tests::TEST
        }
        fn rows() -> &'static [CodeInfo<Self>] {
            CODES
        }
        fn facts(row: &CodeInfo<Self>) -> Vec<Fact> {
            vec![Fact::severity(row.severity), Fact::new("Extra", row.extra.to_string())]
        }
    }

    // What `code_table!` declares for the two modules above (its `mod` lines need files).
    static CODES: &[CodeInfo<Test>] = &[
        CodeInfo {
            code: "X101",
            name: "finds-x",
            severity: Severity::Error,
            source: "src/finds_x.rs",
            raw_doc: <finds_x::FindsX as Documented>::DOC,
            extra: 7,
        },
        CodeInfo {
            code: "X102",
            name: "finds-y",
            severity: Severity::Info,
            source: "src/finds_y.rs",
            raw_doc: <finds_y::FindsY as Documented>::DOC,
            extra: 0,
        },
    ];
    type CheckFn = fn(&mut Vec<&'static str>);
    static CHECKS: &[CheckFn] =
        &[<finds_x::FindsX as Check>::check, <finds_y::FindsY as Check>::check];

    #[test]
    fn rows_read_as_stable_codes() {
        let x = CodeInfo::<Test>::lookup("x101").expect("X101");
        assert_eq!(x.name(), "finds-x");
        assert_eq!(x.doc(), "## What it finds\nAn `x`. More.\n");
        assert_eq!(x.summary(), "An `x`.");
        assert_eq!(x.family_title(), "Shapes");
        assert_eq!(
            x.page().render(),
            "# finds-x (X101)\n\nFamily: Shapes · Default severity: error · Extra: 7\n\nDerived from `src/finds_x.rs`.\n\n## What it finds\nAn `x`. More.\n"
        );
        assert!(CodeInfo::<Test>::lookup("X103").is_none());
        let _ = finds_y::FindsY { what: String::new() }.what;
    }

    #[test]
    fn enabled_skips_ignored_codes_and_prefixes() {
        let run = |ignore: &[&str]| {
            let ignore: Vec<String> = ignore.iter().map(|s| (*s).to_owned()).collect();
            let mut out = Vec::new();
            for (row, check) in enabled::<Test, _>(CHECKS, &ignore) {
                check(&mut out);
                out.push(row.code);
            }
            out
        };
        assert_eq!(run(&[]), ["x", "X101", "y", "X102"]);
        assert_eq!(run(&["x102", ""]), ["x", "X101"]);
        assert_eq!(run(&["X1"]), Vec::<&str>::new());
    }
}
