//! Metadata filters as SQL: the same matches as [`Filter::matches`], computed by the database,
//! with every key and value a parameter (`$n`) of the statement. No text of a filter is ever
//! part of a statement's text.
//!
//! Filters compare metadata loosely (`2` equals `2.0` and `"2"`; `true` equals `"true"`; dates
//! compare by day), so each document's metadata is also stored normalised ([`normalised`]):
//! per key, `{"t": type, "v": text, "n": number, "d": day}`. Against that column a filter is
//! plain SQL: text equality is JSON containment (`@>`, served by the column's GIN index, which
//! is how a tenant pin stays fast), numbers and days compare as `float8` and `int8`.
use crate::kb::postgres::sql::SqlValue;
use crate::knowledge::Meta;
use crate::search::{day, Filter};
use serde_json::{json, Map, Value};

/// A filter's SQL condition on the passages row `p`, and its parameters (numbered after the
/// `already` parameters of the statement it goes in).
pub(crate) struct Condition {
    pub sql: String,
    pub params: Vec<SqlValue>,
    /// The placeholder (`$n`) of the tenant value when the condition requires the `tenant`
    /// column to equal it (the filter is a tenant pin, or an `and` holding one): a search
    /// may then use that tenant's own vector index.
    pub tenant: Option<String>,
}

/// The condition `filter` puts on `p.meta_norm` (and on `p.tenant`, for an equality on the
/// store's `tenant_key`), its parameters numbered from `already + 1`.
pub(crate) fn condition(filter: &Filter, already: usize, tenant_key: Option<&str>) -> Condition {
    let mut out = Builder {
        params: Vec::new(),
        tenant_key,
        tenant: None,
    };
    let sql = out.of(filter, already, true);
    Condition {
        sql,
        params: out.params,
        tenant: out.tenant,
    }
}

/// A condition being built: its parameters so far.
struct Builder<'a> {
    params: Vec<SqlValue>,
    tenant_key: Option<&'a str>,
    /// The first tenant pin that every match must meet.
    tenant: Option<String>,
}

impl Builder<'_> {
    /// A new parameter's placeholder.
    fn param(&mut self, value: SqlValue, already: usize) -> String {
        self.params.push(value);
        format!("${}", already + self.params.len())
    }

    /// A new text parameter, cast (`->` has an integer form too).
    fn text(&mut self, value: &str, already: usize) -> String {
        format!("CAST({} AS text)", self.param(value.into(), already))
    }

    /// `required`: every match must meet `filter` (it is the whole filter or a part of an
    /// `and` that is).
    fn of(&mut self, filter: &Filter, already: usize, required: bool) -> String {
        match filter {
            Filter::Equals { key, value } => {
                self.equals(key, std::slice::from_ref(value), already, required)
            }
            Filter::In { key, values } => self.equals(key, values, already, required),
            Filter::Range {
                key,
                gte,
                gt,
                lte,
                lt,
            } => {
                let k = self.text(key, already);
                let mut parts = Vec::new();
                for (bound, op) in [(gte, ">="), (gt, ">"), (lte, "<="), (lt, "<")] {
                    let Some(bound) = bound else { continue };
                    match bound {
                        Value::Number(n) => {
                            let x = self.param(n.as_f64().unwrap_or(f64::NAN).into(), already);
                            parts.push(format!(
                                "(p.meta_norm -> {k} ->> 't' = 'n' AND \
                                 CAST(p.meta_norm -> {k} ->> 'n' AS float8) {op} CAST({x} AS float8))"
                            ));
                        }
                        Value::String(s) => {
                            // Validated: a date. An unreadable one matches nothing.
                            let d = match day(s) {
                                Some(d) => self.param(SqlValue::Int(d), already),
                                None => "NULL".to_owned(),
                            };
                            parts.push(format!(
                                "CAST(p.meta_norm -> {k} ->> 'd' AS int8) {op} CAST({d} AS int8)"
                            ));
                        }
                        _ => parts.push("false".to_owned()),
                    }
                }
                if parts.is_empty() {
                    "false".to_owned()
                } else {
                    format!("({})", parts.join(" AND "))
                }
            }
            Filter::And(list) | Filter::Or(list) => {
                let joiner = if matches!(filter, Filter::And(_)) {
                    " AND "
                } else {
                    " OR "
                };
                let required = required && matches!(filter, Filter::And(_));
                let parts: Vec<String> =
                    list.iter().map(|f| self.of(f, already, required)).collect();
                format!("({})", parts.join(joiner))
            }
        }
    }

    /// The value under `key` equals one of `values`, as [`Filter::matches`] compares them.
    fn equals(&mut self, key: &str, values: &[Value], already: usize, required: bool) -> String {
        // A string equal to a string only (not a number's or a boolean's text) under the
        // tenant key: the `tenant` column holds exactly those values, B-tree indexed.
        if let ([Value::String(s)], Some(tenant)) = (values, self.tenant_key) {
            if tenant == key && number(s).is_none() && s != "true" && s != "false" {
                let v = self.param(s.as_str().into(), already);
                if required && self.tenant.is_none() {
                    self.tenant = Some(v.clone());
                }
                return format!("p.tenant = CAST({v} AS text)");
            }
        }
        let k = self.text(key, already);
        let mut texts = Vec::new();
        let mut parts = Vec::new();
        for value in values {
            match value {
                Value::Number(n) => {
                    let x = self.param(n.as_f64().unwrap_or(f64::NAN).into(), already);
                    parts.push(format!(
                        "CAST(p.meta_norm -> {k} ->> 'n' AS float8) = CAST({x} AS float8)"
                    ));
                }
                Value::String(s) => {
                    if let Some(y) = number(s) {
                        let y = self.param(y.into(), already);
                        parts.push(format!(
                            "(p.meta_norm -> {k} ->> 't' = 'n' AND \
                             CAST(p.meta_norm -> {k} ->> 'n' AS float8) = CAST({y} AS float8))"
                        ));
                    }
                    texts.push(s.clone());
                }
                Value::Bool(b) => texts.push(b.to_string()),
                _ => {}
            }
        }
        match texts.as_slice() {
            [] => {}
            // One value (an `equals`, a tenant pin): plain containment, which the GIN index
            // serves.
            [one] => {
                let v = self.param(one.as_str().into(), already);
                parts.push(format!(
                    "p.meta_norm @> jsonb_build_object({k}, \
                     jsonb_build_object('v', CAST({v} AS text)))"
                ));
            }
            _ => {
                let list = self.param(json!(texts).to_string().into(), already);
                parts.push(format!(
                    "p.meta_norm -> {k} ->> 't' IN ('s', 'b') AND \
                     p.meta_norm -> {k} ->> 'v' IN \
                     (SELECT jsonb_array_elements_text(CAST({list} AS jsonb)))"
                ));
            }
        }
        if parts.is_empty() {
            "false".to_owned()
        } else {
            format!("({})", parts.join(" OR "))
        }
    }
}

/// A string's number, as equality reads it (finite only: no JSON number is infinite).
fn number(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|x| x.is_finite())
}

/// A document's metadata as the filter column stores it.
pub(crate) fn normalised(meta: &Meta) -> Value {
    let mut out = Map::new();
    for (key, value) in meta {
        let entry = match value {
            Value::Number(n) => json!({"t": "n", "v": n.to_string(), "n": n.as_f64()}),
            Value::Bool(b) => json!({"t": "b", "v": b.to_string()}),
            Value::String(s) => {
                let mut e = Map::new();
                e.insert("t".into(), "s".into());
                e.insert("v".into(), s.clone().into());
                if let Some(n) = number(s) {
                    e.insert("n".into(), n.into());
                }
                if let Some(d) = day(s) {
                    e.insert("d".into(), d.into());
                }
                Value::Object(e)
            }
            other => json!({"t": "x", "v": other.to_string()}),
        };
        out.insert(key.clone(), entry);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_are_parameters_never_text() {
        let hostile = "x'); DROP TABLE bounded_rag_passages; --";
        let filter = Filter::And(vec![
            Filter::equals(hostile, hostile),
            Filter::In {
                key: "k".into(),
                values: vec![json!(hostile), json!(2), json!(true)],
            },
            Filter::Range {
                key: hostile.into(),
                gte: Some(json!("2024-01-01")),
                gt: None,
                lte: None,
                lt: Some(json!(5)),
            },
        ]);
        let c = condition(&filter, 3, Some(hostile));
        assert!(!c.sql.contains("DROP"), "{}", c.sql);
        assert!(
            c.sql.contains("$4"),
            "numbered after the statement's own: {}",
            c.sql
        );
        assert!(c.params.contains(&SqlValue::Text(hostile.into())));
    }

    #[test]
    fn an_equality_on_the_tenant_key_is_the_tenant_column_when_it_means_the_same() {
        let pin = Filter::equals("tenant", "acme");
        let c = condition(&pin, 0, Some("tenant"));
        assert_eq!(c.sql, "p.tenant = CAST($1 AS text)");
        assert_eq!(c.params, [SqlValue::Text("acme".into())]);
        assert_eq!(c.tenant.as_deref(), Some("$1"));
        // Inside an `and` the pin still holds for every match; inside an `or` it does not.
        let both = Filter::And(vec![Filter::equals("year", "x"), pin.clone()]);
        assert_eq!(
            condition(&both, 4, Some("tenant")).tenant.as_deref(),
            Some("$7")
        );
        let either = Filter::Or(vec![Filter::equals("year", "x"), pin.clone()]);
        assert_eq!(condition(&either, 4, Some("tenant")).tenant, None);
        let nested = Filter::And(vec![either]);
        assert_eq!(condition(&nested, 4, Some("tenant")).tenant, None);
        // Another key, no tenant key, or a value loose equality also matches as a number or a
        // boolean: the metadata column.
        for (filter, key) in [
            (Filter::equals("region", "acme"), Some("tenant")),
            (pin.clone(), None),
            (Filter::equals("tenant", "42"), Some("tenant")),
            (Filter::equals("tenant", "true"), Some("tenant")),
        ] {
            let c = condition(&filter, 0, key);
            assert!(c.sql.contains("p.meta_norm @>"), "{filter:?}: {}", c.sql);
        }
    }

    #[test]
    fn metadata_is_normalised_for_loose_comparison() {
        let meta: Meta = serde_json::from_value(json!({
            "year": 2024, "code": "2024", "pinned": true, "updated": "2024-03-01T10:00:00Z"
        }))
        .unwrap();
        let n = normalised(&meta);
        assert_eq!(n["year"], json!({"t": "n", "v": "2024", "n": 2024.0}));
        assert_eq!(n["code"]["n"], json!(2024.0));
        assert_eq!(n["pinned"], json!({"t": "b", "v": "true"}));
        assert!(n["updated"]["d"].is_i64());
    }
}
