//! Our metadata filters as Bedrock's `RetrievalFilter`: `equals`, `in`, numeric ranges as
//! `greaterThan[OrEquals]` / `lessThan[OrEquals]`, `and` as `andAll`, `or` as `orAll`.
//!
//! Our equality is loose (`2021` equals `"2021"`, `true` equals `"true"`; [`Filter`]), Bedrock's
//! is typed, so a value is sent in each of its forms ([`forms`]): `equals year "2021"` becomes
//! `orAll` of `equals "2021"` and `equals 2021`, and an `in` list one `in` per type. Only the
//! canonical spelling is sent: a stored `"2021.0"` is not found by `2021`.
//!
//! What Bedrock cannot express is refused with the filter's path, never dropped: a date range
//! (Bedrock compares numbers only), and an empty `or` (which matches nothing; Bedrock has no
//! such filter). An empty `and` matches everything and sends no filter; a one-member `and` or
//! `or` sends its member (Bedrock wants at least two).

use crate::search::Filter;
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
        Filter::Equals { key, value } => {
            let any = forms(value)
                .into_iter()
                .map(|form| RetrievalFilter::Equals(attribute(key, form)))
                .collect();
            return Ok(joined(any, RetrievalFilter::OrAll));
        }
        Filter::In { key, values } if !values.is_empty() => {
            let (mut strings, mut numbers, mut rest) = (Vec::new(), Vec::new(), Vec::new());
            for form in values.iter().flat_map(forms) {
                let list = match form {
                    Document::String(_) => &mut strings,
                    Document::Number(_) => &mut numbers,
                    _ => &mut rest,
                };
                if !list.contains(&form) {
                    list.push(form);
                }
            }
            let mut any: Vec<RetrievalFilter> = [strings, numbers]
                .into_iter()
                .filter(|list| !list.is_empty())
                .map(|list| RetrievalFilter::In(attribute(key, Document::Array(list))))
                .collect();
            any.extend(
                rest.into_iter()
                    .map(|v| RetrievalFilter::Equals(attribute(key, v))),
            );
            return Ok(joined(any, RetrievalFilter::OrAll));
        }
        Filter::In { key, .. } => RetrievalFilter::In(attribute(key, Document::Array(Vec::new()))),
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

/// The typed forms a loosely equal metadata value takes: the value itself, then a number's or
/// a boolean's text, or the number or boolean a string reads as.
fn forms(value: &Value) -> Vec<Document> {
    let mut out = vec![document(value)];
    match value {
        Value::Number(n) => out.push(Document::String(n.to_string())),
        Value::Bool(b) => out.push(Document::String(b.to_string())),
        Value::String(s) => {
            let text = s.trim();
            if let Ok(n) = text.parse::<serde_json::Number>() {
                out.push(document(&Value::Number(n)));
            } else if let Ok(b) = text.parse::<bool>() {
                out.push(Document::Bool(b));
            }
        }
        _ => {}
    }
    out
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
            RetrievalFilter::OrAll(vec![
                RetrievalFilter::Equals(attribute("pinned", Document::Bool(true))),
                RetrievalFilter::Equals(attribute("pinned", Document::String("true".into()))),
            ]),
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
    fn loose_equality_is_sent_in_every_typed_form() {
        let number = |n: u64| Document::Number(Number::PosInt(n));
        let text = |s: &str| Document::String(s.into());
        let year = parse(json!({"equals": {"key": "year", "value": "2021"}}));
        assert_eq!(
            to_bedrock(&year).unwrap(),
            Some(RetrievalFilter::OrAll(vec![
                RetrievalFilter::Equals(attribute("year", text("2021"))),
                RetrievalFilter::Equals(attribute("year", number(2021))),
            ]))
        );
        let pinned = parse(json!({"equals": {"key": "pinned", "value": " false"}}));
        assert_eq!(
            to_bedrock(&pinned).unwrap(),
            Some(RetrievalFilter::OrAll(vec![
                RetrievalFilter::Equals(attribute("pinned", text(" false"))),
                RetrievalFilter::Equals(attribute("pinned", Document::Bool(false))),
            ]))
        );
        let years = parse(json!({"in": {"key": "year", "values": [2024, "2030", "2024", true]}}));
        assert_eq!(
            to_bedrock(&years).unwrap(),
            Some(RetrievalFilter::OrAll(vec![
                RetrievalFilter::In(attribute(
                    "year",
                    Document::Array(vec![text("2024"), text("2030"), text("true")])
                )),
                RetrievalFilter::In(attribute(
                    "year",
                    Document::Array(vec![number(2024), number(2030)])
                )),
                RetrievalFilter::Equals(attribute("year", Document::Bool(true))),
            ]))
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
