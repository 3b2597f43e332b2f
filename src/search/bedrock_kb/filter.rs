//! Our metadata filters as Bedrock's `RetrievalFilter`: `equals`, `in`, numeric ranges as
//! `greaterThan[OrEquals]` / `lessThan[OrEquals]`, `and` as `andAll`, `or` as `orAll`.
//!
//! What Bedrock cannot express is refused with the filter's path, never dropped: a date range
//! (Bedrock compares numbers only), and an empty `or` (which matches nothing; Bedrock has no
//! such filter). An empty `and` matches everything and sends no filter; a one-member `and` or
//! `or` sends its member (Bedrock wants at least two).

use crate::search::filter::Filter;
use aws_sdk_bedrockagentruntime::types::{FilterAttribute, RetrievalFilter};
use aws_smithy_types::{Document, Number};
use serde_json::Value;

/// `filter` as Bedrock's; `Ok(None)` when it matches everything; `Err` names the part Bedrock
/// cannot express (`filters.and[1].range`) and why.
pub(crate) fn to_bedrock(filter: &Filter) -> Result<Option<RetrievalFilter>, String> {
    convert(filter, "filters")
}

fn convert(filter: &Filter, path: &str) -> Result<Option<RetrievalFilter>, String> {
    Ok(Some(match filter {
        Filter::Equals { key, value } => RetrievalFilter::Equals(attribute(key, document(value))),
        Filter::In { key, values } => RetrievalFilter::In(attribute(
            key,
            Document::Array(values.iter().map(document).collect()),
        )),
        Filter::Range {
            key,
            gte,
            gt,
            lte,
            lt,
        } => {
            let path = format!("{path}.range");
            let bounds = [
                (gte, RetrievalFilter::GreaterThanOrEquals as fn(_) -> _),
                (gt, RetrievalFilter::GreaterThan),
                (lte, RetrievalFilter::LessThanOrEquals),
                (lt, RetrievalFilter::LessThan),
            ];
            let mut all = Vec::new();
            for (bound, make) in bounds {
                let Some(bound) = bound else { continue };
                let Some(number) = bound.as_f64() else {
                    return Err(format!(
                        "{path}: a Bedrock knowledge base compares numbers only, not dates \
                         ({bound}); store the date as a number (e.g. 20240131) to range on it"
                    ));
                };
                all.push(make(attribute(
                    key,
                    Document::Number(Number::Float(number)),
                )));
            }
            return Ok(joined(all, RetrievalFilter::AndAll));
        }
        Filter::And(members) => {
            let all = members_of(members, &format!("{path}.and"))?;
            return Ok(joined(all, RetrievalFilter::AndAll));
        }
        Filter::Or(members) => {
            if members.is_empty() {
                return Err(format!(
                    "{path}.or: an empty `or` matches nothing, which a Bedrock knowledge base \
                     cannot express"
                ));
            }
            let mut any = Vec::new();
            for (i, member) in members.iter().enumerate() {
                match convert(member, &format!("{path}.or[{i}]"))? {
                    Some(f) => any.push(f),
                    // A member that matches everything makes the `or` match everything.
                    None => return Ok(None),
                }
            }
            return Ok(joined(any, RetrievalFilter::OrAll));
        }
    }))
}

/// The converted members of an `and`; a member that matches everything is left out.
fn members_of(members: &[Filter], path: &str) -> Result<Vec<RetrievalFilter>, String> {
    let mut out = Vec::new();
    for (i, member) in members.iter().enumerate() {
        if let Some(f) = convert(member, &format!("{path}[{i}]"))? {
            out.push(f);
        }
    }
    Ok(out)
}

/// No member: no filter; one: itself; more: `join`ed.
fn joined(
    mut members: Vec<RetrievalFilter>,
    join: fn(Vec<RetrievalFilter>) -> RetrievalFilter,
) -> Option<RetrievalFilter> {
    match members.len() {
        0 => None,
        1 => members.pop(),
        _ => Some(join(members)),
    }
}

fn attribute(key: &str, value: Document) -> FilterAttribute {
    FilterAttribute::builder()
        .key(key)
        .value(value)
        .build()
        .expect("key and value are set")
}

/// A JSON filter value as a Smithy document (strings, numbers and booleans; validation has
/// refused anything else).
fn document(value: &Value) -> Document {
    match value {
        Value::String(s) => Document::String(s.clone()),
        Value::Bool(b) => Document::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => Document::Number(Number::PosInt(u)),
            (None, Some(i), _) => Document::Number(Number::NegInt(i)),
            (_, _, f) => Document::Number(Number::Float(f.unwrap_or_default())),
        },
        Value::Null => Document::Null,
        Value::Array(items) => Document::Array(items.iter().map(document).collect()),
        Value::Object(map) => {
            Document::Object(map.iter().map(|(k, v)| (k.clone(), document(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: serde_json::Value) -> Filter {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn each_condition_maps_to_its_bedrock_form() {
        let filter = parse(json!({"and": [
            {"equals": {"key": "product", "value": "durian"}},
            {"in": {"key": "region", "values": ["my", "th"]}},
            {"range": {"key": "year", "gte": 2020, "lt": 2025}},
            {"or": [{"equals": {"key": "pinned", "value": true}}]}
        ]}));
        let expected = RetrievalFilter::AndAll(vec![
            RetrievalFilter::Equals(attribute("product", Document::String("durian".into()))),
            RetrievalFilter::In(attribute(
                "region",
                Document::Array(vec![
                    Document::String("my".into()),
                    Document::String("th".into()),
                ]),
            )),
            RetrievalFilter::AndAll(vec![
                RetrievalFilter::GreaterThanOrEquals(attribute(
                    "year",
                    Document::Number(Number::Float(2020.0)),
                )),
                RetrievalFilter::LessThan(attribute(
                    "year",
                    Document::Number(Number::Float(2025.0)),
                )),
            ]),
            RetrievalFilter::Equals(attribute("pinned", Document::Bool(true))),
        ]);
        assert_eq!(to_bedrock(&filter).unwrap(), Some(expected));
        assert_eq!(to_bedrock(&Filter::And(Vec::new())).unwrap(), None);
        let open = parse(json!({"or": [{"and": []}, {"equals": {"key": "a", "value": 1}}]}));
        assert_eq!(
            to_bedrock(&open).unwrap(),
            None,
            "an always-true member opens the or"
        );
    }

    #[test]
    fn what_bedrock_cannot_express_is_refused_with_its_path() {
        let dates = parse(json!({"and": [
            {"equals": {"key": "a", "value": 1}},
            {"range": {"key": "updated", "gte": "2024-01-01"}}
        ]}));
        let err = to_bedrock(&dates).unwrap_err();
        assert!(err.starts_with("filters.and[1].range: "), "{err}");
        assert!(err.contains("numbers only"), "{err}");
        let err = to_bedrock(&Filter::Or(Vec::new())).unwrap_err();
        assert!(err.starts_with("filters.or: "), "{err}");
    }

    #[test]
    fn hostile_values_stay_values() {
        let filter = parse(json!({"equals": {"key": "k\"}; DROP", "value": "') OR 1=1 --"}}));
        assert_eq!(
            to_bedrock(&filter).unwrap(),
            Some(RetrievalFilter::Equals(attribute(
                "k\"}; DROP",
                Document::String("') OR 1=1 --".into())
            )))
        );
    }
}
