//! Integer request fields as JSON Schema reads them: `2` and `2.0` are the same integer (JSON
//! Schema's `integer` is "a number with a zero fractional part"), so both are accepted; `2.5`,
//! a negative number or one past the field's type is refused with serde's usual message.
//!
//! Used with `#[serde(deserialize_with = ...)]` on every integer field of a request body.

use serde::de::{self, Deserializer, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// An unsigned integer type a request field may have.
pub(crate) trait Unsigned: TryFrom<u64> + Sized {
    /// Its name in messages (`u32`).
    const NAME: &'static str;
}

impl Unsigned for u32 {
    const NAME: &'static str = "u32";
}

impl Unsigned for u64 {
    const NAME: &'static str = "u64";
}

/// Accepts an unsigned integer written as a JSON integer or as an integral number (`2.0`).
struct Integral<T>(PhantomData<T>);

impl<T: Unsigned> Visitor<'_> for Integral<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an integer ({})", T::NAME)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        T::try_from(v).map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        u64::try_from(v)
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            .and_then(|v| self.visit_u64(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        // Exactly representable in u64 and with no fractional part: an integer by JSON Schema.
        if v.fract() == 0.0 && v >= 0.0 && v < u64::MAX as f64 {
            self.visit_u64(v as u64)
        } else {
            Err(E::invalid_value(de::Unexpected::Float(v), &self))
        }
    }
}

/// A required (or defaulted) unsigned integer field.
pub(crate) fn unsigned<'de, D: Deserializer<'de>, T: Unsigned>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(Integral(PhantomData))
}

/// An optional unsigned integer field (`null` is absent).
pub(crate) fn optional_unsigned<'de, D: Deserializer<'de>, T: Unsigned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    struct Optional<T>(PhantomData<T>);
    impl<'de, T: Unsigned> Visitor<'de> for Optional<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "an integer ({}) or null", T::NAME)
        }
        fn visit_none<E: de::Error>(self) -> Result<Option<T>, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Option<T>, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
            unsigned(d).map(Some)
        }
    }
    d.deserialize_option(Optional(PhantomData))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Body {
        #[serde(deserialize_with = "unsigned")]
        n: u32,
        #[serde(default, deserialize_with = "optional_unsigned")]
        m: Option<u64>,
    }

    fn parse(json: &str) -> Result<Body, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn integral_numbers_are_integers_and_others_are_refused() {
        assert_eq!(parse(r#"{"n": 2}"#).unwrap(), Body { n: 2, m: None });
        assert_eq!(parse(r#"{"n": 2.0, "m": 7e2}"#).unwrap().m, Some(700));
        assert_eq!(parse(r#"{"n": 1, "m": null}"#).unwrap().m, None);
        assert_eq!(parse(r#"{"n": -0.0}"#).unwrap().n, 0);
        for bad in [
            r#"{"n": 2.5}"#,
            r#"{"n": -1}"#,
            r#"{"n": -1.0}"#,
            r#"{"n": 4294967296}"#,
            r#"{"n": 1e300}"#,
            r#"{"n": "3"}"#,
            r#"{"n": 1, "m": 0.5}"#,
        ] {
            let message = parse(bad).unwrap_err();
            assert!(message.contains("an integer"), "{bad}: {message}");
        }
    }
}
