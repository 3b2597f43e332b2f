//! Metadata filters: which documents a search may return, judged on the metadata their source
//! carried (Markdown front matter, a `NAME.meta.json` sidecar, a JSONL record's `metadata`).
//!
//! A filter is a small closed tree, sent as the request field `filters`:
//!
//! ```json
//! {"and": [
//!   {"equals": {"key": "product", "value": "durian"}},
//!   {"in": {"key": "region", "values": ["my", "th"]}},
//!   {"range": {"key": "year", "gte": 2020, "lt": 2025}},
//!   {"or": [{"range": {"key": "updated", "gte": "2024-01-01"}},
//!           {"equals": {"key": "pinned", "value": true}}]}
//! ]}
//! ```
//!
//! A range compares numbers with numbers and dates (`YYYY-MM-DD`, optionally followed by a
//! time, compared by day) with dates. A document without the key never matches a condition
//! on it. Filters are applied before the top k is taken (see [`super::allowed`]), so a
//! filtered search returns k documents whenever k matching ones exist.
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(crate) use crate::knowledge::Meta;

/// Most conditions in one filter; a bigger tree is refused.
pub(crate) const MAX_CONDITIONS: usize = 64;
/// Deepest nesting of `and` / `or`.
pub(crate) const MAX_DEPTH: usize = 4;
/// Most values of one `in`.
pub(crate) const MAX_IN_VALUES: usize = 100;

/// A metadata filter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Filter {
    /// The value under `key` equals `value` (a string, number or boolean).
    Equals {
        /// Metadata key.
        key: String,
        /// The value to equal.
        value: Value,
    },
    /// The value under `key` equals one of `values`.
    In {
        /// Metadata key.
        key: String,
        /// The accepted values.
        values: Vec<Value>,
    },
    /// The value under `key` lies within the bounds: all numbers or all dates.
    Range {
        /// Metadata key.
        key: String,
        /// Greater than or equal.
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        gte: Option<Value>,
        /// Greater than.
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        gt: Option<Value>,
        /// Less than or equal.
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        lte: Option<Value>,
        /// Less than.
        #[serde(
            default,
            deserialize_with = "present",
            skip_serializing_if = "Option::is_none"
        )]
        lt: Option<Value>,
    },
    /// Every filter matches.
    And(Vec<Filter>),
    /// At least one filter matches.
    Or(Vec<Filter>),
}

/// A filter that failed validation: where (`filters.and[1].range`) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct FilterError {
    /// Path of the bad part, from `filters`.
    pub path: String,
    /// What is wrong and what is accepted.
    pub message: String,
}

/// A value a range compares: a number, or a date as days since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
enum Ordinal {
    Number(f64),
    Day(i64),
}

impl Ordinal {
    fn of(value: &Value) -> Option<Self> {
        match value {
            Value::Number(n) => n.as_f64().map(Ordinal::Number),
            Value::String(s) => day(s).map(Ordinal::Day),
            _ => None,
        }
    }

    fn same_kind(self, other: Self) -> bool {
        matches!(
            (self, other),
            (Ordinal::Number(_), Ordinal::Number(_)) | (Ordinal::Day(_), Ordinal::Day(_))
        )
    }
}

/// `YYYY-MM-DD` (anything after the tenth character, such as a time, is ignored) as a day.
pub(crate) fn day(text: &str) -> Option<i64> {
    let head = text.get(..10)?;
    let rest = &text[10..];
    if !(rest.is_empty() || rest.starts_with(['T', 't', ' '])) {
        return None;
    }
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let date = time::Date::parse(head, &format).ok()?;
    Some(i64::from(date.to_julian_day()))
}

/// A range bound that is present, `null` included: `{"lt": null}` is a bound that is not a
/// number or a date (refused by validation, as the contract says), not an absent one.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

fn scalar(value: &Value) -> bool {
    matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_))
}

/// Equal as metadata values: numbers by value (`2` equals `2.0`, and the string `"2"`, as
/// `--filter year=2024` sends), booleans and the strings `true` / `false` alike, others exactly.
fn same(a: &Value, b: &Value) -> bool {
    let number = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match (a, b) {
        (Value::Number(_), _) | (_, Value::Number(_)) => {
            number(a).is_some_and(|x| Some(x) == number(b))
        }
        (Value::Bool(x), Value::String(s)) | (Value::String(s), Value::Bool(x)) => {
            s == if *x { "true" } else { "false" }
        }
        _ => a == b,
    }
}

impl Filter {
    /// `key = value` for a string value (the CLI's `--filter key=value`, the tenant pin).
    pub fn equals(key: impl Into<String>, value: impl Into<String>) -> Self {
        Filter::Equals {
            key: key.into(),
            value: Value::String(value.into()),
        }
    }

    /// Both filters (flattening nested `and`s).
    pub(crate) fn and(self, other: Filter) -> Self {
        let mut all = match self {
            Filter::And(list) => list,
            one => vec![one],
        };
        all.push(other);
        Filter::And(all)
    }

    /// Checks sizes, keys, values and bounds; the error's path starts at `root`.
    pub fn validate(&self, root: &str) -> Result<(), FilterError> {
        let mut count = 0;
        self.check(root, 1, &mut count)
    }

    fn check(&self, path: &str, depth: usize, count: &mut usize) -> Result<(), FilterError> {
        let fail = |at: String, message: String| Err(FilterError { path: at, message });
        *count += 1;
        if *count > MAX_CONDITIONS {
            return fail(
                path.to_owned(),
                format!("at most {MAX_CONDITIONS} conditions in all"),
            );
        }
        let key_ok = |name: &str, key: &str| {
            if key.trim().is_empty() || key.len() > 64 {
                return fail(
                    format!("{path}.{name}.key"),
                    "must be a metadata key of 1..=64 characters".into(),
                );
            }
            Ok(())
        };
        match self {
            Filter::Equals { key, value } => {
                key_ok("equals", key)?;
                if !scalar(value) {
                    return fail(
                        format!("{path}.equals.value"),
                        "must be a string, number or boolean".into(),
                    );
                }
            }
            Filter::In { key, values } => {
                key_ok("in", key)?;
                if values.is_empty() || values.len() > MAX_IN_VALUES {
                    return fail(
                        format!("{path}.in.values"),
                        format!("must hold 1..={MAX_IN_VALUES} values"),
                    );
                }
                if let Some(i) = values.iter().position(|v| !scalar(v)) {
                    return fail(
                        format!("{path}.in.values[{i}]"),
                        "must be a string, number or boolean".into(),
                    );
                }
            }
            Filter::Range {
                key,
                gte,
                gt,
                lte,
                lt,
            } => {
                key_ok("range", key)?;
                let mut kind: Option<Ordinal> = None;
                let bounds = [("gte", gte), ("gt", gt), ("lte", lte), ("lt", lt)];
                for (name, bound) in bounds {
                    let Some(bound) = bound else { continue };
                    let Some(ordinal) = Ordinal::of(bound) else {
                        return fail(
                            format!("{path}.range.{name}"),
                            "must be a number or a date (YYYY-MM-DD)".into(),
                        );
                    };
                    if kind.is_some_and(|k| !k.same_kind(ordinal)) {
                        return fail(
                            format!("{path}.range.{name}"),
                            "bounds must be all numbers or all dates".into(),
                        );
                    }
                    kind = Some(ordinal);
                }
                if kind.is_none() {
                    return fail(
                        format!("{path}.range"),
                        "needs at least one of gte, gt, lte, lt".into(),
                    );
                }
            }
            Filter::And(list) | Filter::Or(list) => {
                let name = if matches!(self, Filter::And(_)) {
                    "and"
                } else {
                    "or"
                };
                if list.is_empty() {
                    return fail(
                        format!("{path}.{name}"),
                        "must hold at least one filter".into(),
                    );
                }
                if depth >= MAX_DEPTH {
                    return fail(
                        format!("{path}.{name}"),
                        format!("and/or nest at most {MAX_DEPTH} levels deep"),
                    );
                }
                for (i, inner) in list.iter().enumerate() {
                    inner.check(&format!("{path}.{name}[{i}]"), depth + 1, count)?;
                }
            }
        }
        Ok(())
    }

    /// Whether a document with metadata `meta` passes (a validated filter).
    pub(crate) fn matches(&self, meta: &Meta) -> bool {
        match self {
            Filter::Equals { key, value } => meta.get(key).is_some_and(|v| same(v, value)),
            Filter::In { key, values } => meta
                .get(key)
                .is_some_and(|v| values.iter().any(|x| same(v, x))),
            Filter::Range {
                key,
                gte,
                gt,
                lte,
                lt,
            } => {
                let Some(value) = meta.get(key).and_then(Ordinal::of) else {
                    return false;
                };
                let within = |bound: &Option<Value>, ok: fn(&Ordinal, &Ordinal) -> bool| {
                    bound
                        .as_ref()
                        .and_then(Ordinal::of)
                        .is_none_or(|b| value.same_kind(b) && ok(&value, &b))
                };
                within(gte, |v, b| v >= b)
                    && within(gt, |v, b| v > b)
                    && within(lte, |v, b| v <= b)
                    && within(lt, |v, b| v < b)
            }
            Filter::And(list) => list.iter().all(|f| f.matches(meta)),
            Filter::Or(list) => list.iter().any(|f| f.matches(meta)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(value: Value) -> Meta {
        serde_json::from_value(value).unwrap()
    }

    fn filter(value: Value) -> Filter {
        let f: Filter = serde_json::from_value(value).unwrap();
        f.validate("filters").unwrap();
        f
    }

    #[test]
    fn conditions_match_by_value_range_and_logic() {
        let doc = meta(
            json!({"product": "durian", "year": 2022, "updated": "2024-03-05T10:00:00Z", "pinned": true}),
        );
        assert!(filter(json!({"equals": {"key": "product", "value": "durian"}})).matches(&doc));
        assert!(!filter(json!({"equals": {"key": "product", "value": "mango"}})).matches(&doc));
        assert!(filter(json!({"equals": {"key": "year", "value": 2022.0}})).matches(&doc));
        assert!(
            Filter::equals("year", "2022").matches(&doc),
            "as the CLI sends it"
        );
        assert!(Filter::equals("pinned", "true").matches(&doc));
        assert!(!Filter::equals("product", "1").matches(&doc));
        assert!(
            filter(json!({"in": {"key": "product", "values": ["mango", "durian"]}})).matches(&doc)
        );
        assert!(filter(json!({"range": {"key": "year", "gte": 2020, "lt": 2023}})).matches(&doc));
        assert!(!filter(json!({"range": {"key": "year", "gt": 2022}})).matches(&doc));
        assert!(filter(json!({"range": {"key": "updated", "gte": "2024-03-05"}})).matches(&doc));
        assert!(!filter(json!({"range": {"key": "updated", "lt": "2024-03-05"}})).matches(&doc));
        assert!(!filter(json!({"range": {"key": "product", "gte": 1}})).matches(&doc));
        assert!(!filter(json!({"equals": {"key": "missing", "value": "x"}})).matches(&doc));
        let both = filter(json!({"and": [
            {"equals": {"key": "pinned", "value": true}},
            {"or": [{"equals": {"key": "product", "value": "mango"}}, {"range": {"key": "year", "lte": 2022}}]}
        ]}));
        assert!(both.matches(&doc));
        assert!(!both.matches(&meta(json!({"pinned": true, "year": 2030}))));
    }

    #[test]
    fn bad_filters_name_the_part_at_fault() {
        let path = |value: Value| {
            let f: Filter = serde_json::from_value(value).unwrap();
            f.validate("filters").unwrap_err().path
        };
        assert_eq!(
            path(json!({"equals": {"key": "", "value": 1}})),
            "filters.equals.key"
        );
        assert_eq!(
            path(json!({"equals": {"key": "a", "value": [1]}})),
            "filters.equals.value"
        );
        assert_eq!(
            path(json!({"in": {"key": "a", "values": []}})),
            "filters.in.values"
        );
        assert_eq!(path(json!({"range": {"key": "a"}})), "filters.range");
        assert_eq!(
            path(
                json!({"and": [{"equals": {"key": "a", "value": 1}}, {"range": {"key": "a", "gte": 1, "lt": "2024-01-01"}}]})
            ),
            "filters.and[1].range.lt"
        );
        assert_eq!(
            path(json!({"range": {"key": "a", "gte": "soon"}})),
            "filters.range.gte"
        );
        // A null bound is a bound that is not a number or a date, not an absent one.
        assert_eq!(
            path(json!({"range": {"key": "a", "gte": 2020, "lt": null}})),
            "filters.range.lt"
        );
        assert_eq!(path(json!({"or": []})), "filters.or");
        let deep =
            json!({"and": [{"and": [{"and": [{"and": [{"equals": {"key": "a", "value": 1}}]}]}]}]});
        assert_eq!(path(deep), "filters.and[0].and[0].and[0].and");
        assert!(serde_json::from_value::<Filter>(json!({"like": {"key": "a"}})).is_err());
    }

    #[test]
    fn and_flattens() {
        let f = Filter::equals("a", "1").and(Filter::equals("b", "2"));
        let f = f.and(Filter::equals("c", "3"));
        assert!(matches!(&f, Filter::And(list) if list.len() == 3));
    }
}
