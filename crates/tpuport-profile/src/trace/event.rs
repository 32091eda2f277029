//! One trace event as the analysis needs it, deserialised from its raw slice with borrowed
//! strings (no allocation unless a string holds escapes).
//!
//! Producers disagree on types: kineto writes `pid`/`tid` as numbers or as strings (`"Spans"`),
//! TSL writes every `args` value as a string (`"step_num": "3"`), kineto writes numbers. Each
//! field therefore accepts a string or a number, and unknown fields are skipped.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// A scalar JSON value kept as text: strings borrowed, numbers and booleans formatted.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Text<'a>(pub(crate) Cow<'a, str>);

impl Text<'_> {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, number or boolean")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed("")))
            }
        }
        d.deserialize_any(V)
    }
}

/// A process or thread id: kineto writes numbers and strings (`"Spans"`), TSL numbers. Kept
/// apart so that numeric ids are interned without formatting them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Id<'a> {
    Num(i64),
    Str(Cow<'a, str>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Id<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Id<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number or a string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Id::Num(v))
            }
            #[allow(clippy::cast_possible_wrap, reason = "ids are compared, not computed with")]
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Id::Num(v as i64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Id::Str(Cow::Owned(v.to_string())))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Id::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Id::Str(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_any(V)
    }
}

/// A timestamp or duration in microseconds, written as a number or a numeric string.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Micros(pub(crate) f64);

impl<'de> Deserialize<'de> for Micros {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Micros;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of microseconds")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Micros, E> {
                Ok(Micros(v))
            }
            #[allow(clippy::cast_precision_loss, reason = "timestamps fit f64's 53 bits")]
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Micros, E> {
                Ok(Micros(v as f64))
            }
            #[allow(clippy::cast_precision_loss, reason = "timestamps fit f64's 53 bits")]
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Micros, E> {
                Ok(Micros(v as f64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Micros, E> {
                v.trim()
                    .parse()
                    .map(Micros)
                    .map_err(|_| E::custom(format!("`{v}` is not a number")))
            }
        }
        d.deserialize_any(V)
    }
}

/// The `args` keys the analysis reads; others are skipped.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Args<'a> {
    /// Metadata events: the process or thread name.
    #[serde(borrow, default)]
    pub(crate) name: Option<Text<'a>>,
    /// TSL step annotations (`StepTraceAnnotation`) and device `Steps` events.
    #[serde(borrow, default)]
    pub(crate) step_num: Option<Text<'a>>,
    /// TSL device op events: the HLO instruction.
    #[serde(borrow, default)]
    pub(crate) hlo_op: Option<Text<'a>>,
    /// TSL device op events: the HLO module.
    #[serde(borrow, default)]
    pub(crate) hlo_module: Option<Text<'a>>,
    /// kineto `python_function` events: the caller `file:line`.
    #[serde(borrow, default, rename = "CallFrom")]
    pub(crate) call_from: Option<Text<'a>>,
    /// torch_xla `XLAGraphExecutor::Compile` events.
    #[serde(borrow, default)]
    pub(crate) graph_hash: Option<Text<'a>>,
}

/// One event of `traceEvents`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawEvent<'a> {
    #[serde(borrow, default)]
    pub(crate) name: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub(crate) ph: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub(crate) cat: Option<Text<'a>>,
    #[serde(borrow, default)]
    pub(crate) pid: Option<Id<'a>>,
    #[serde(borrow, default)]
    pub(crate) tid: Option<Id<'a>>,
    #[serde(default)]
    pub(crate) ts: Option<Micros>,
    #[serde(default)]
    pub(crate) dur: Option<Micros>,
    #[serde(borrow, default)]
    pub(crate) args: Option<Args<'a>>,
}

/// The string of an optional field.
pub(crate) fn text<'s>(t: &'s Option<Text<'_>>) -> Option<&'s str> {
    t.as_ref().map(Text::as_str)
}

impl RawEvent<'_> {
    pub(crate) fn name(&self) -> &str {
        self.name.as_ref().map_or("", Text::as_str)
    }
    pub(crate) fn ph(&self) -> &str {
        self.ph.as_ref().map_or("", Text::as_str)
    }
    pub(crate) fn cat(&self) -> &str {
        self.cat.as_ref().map_or("", Text::as_str)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn kineto_and_tsl_types() {
        let e: RawEvent<'_> = serde_json::from_str(
            r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":12,"tid":"Spans","ts":5454846053538.053,"dur":49.1,"args":{"External id":1,"Record function id":0}}"#,
        )
        .unwrap();
        assert_eq!(e.name(), "aten::mm");
        assert_eq!(e.pid, Some(Id::Num(12)));
        assert_eq!(e.tid, Some(Id::Str("Spans".into())));
        assert!((e.ts.unwrap().0 - 5_454_846_053_538.053).abs() < 1e-3);
        let e: RawEvent<'_> = serde_json::from_str(
            r#"{"ph":"X","pid":701,"tid":3501668036,"ts":31893.77,"dur":596.055,"name":"train","args":{"step_num":"0","hlo_op":null}}"#,
        )
        .unwrap();
        assert_eq!(text(&e.args.as_ref().unwrap().step_num), Some("0"));
        let e: RawEvent<'_> = serde_json::from_str(r#"{"name":"a\"b","ts":"12.5"}"#).unwrap();
        assert_eq!(e.name(), "a\"b");
        assert_eq!(e.ts.unwrap().0, 12.5);
        let e: RawEvent<'_> = serde_json::from_str("{}").unwrap();
        assert_eq!(e.ph(), "");
    }
}
