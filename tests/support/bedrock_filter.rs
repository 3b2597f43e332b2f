//! Bedrock's `RetrievalFilter` as a knowledge base applies it, for the scripted runtime
//! ([`super::agent_server::knowledge_base`]): typed comparisons (a number equals only a
//! number, a string only a string, a boolean only a boolean), ranges on numbers only, and the
//! request validation Bedrock does (`andAll` and `orAll` need at least two members).

use serde_json::{Map, Value};

/// Why a filter is refused, as Bedrock's `ValidationException` would say.
pub fn invalid(filter: &Value) -> Option<String> {
    let Some((op, arg)) = filter.as_object().and_then(|o| o.iter().next()) else {
        return Some(format!("a filter is an object of one member: {filter}"));
    };
    match op.as_str() {
        "andAll" | "orAll" => {
            let members = arg.as_array().map_or(&[][..], Vec::as_slice);
            if members.len() < 2 {
                return Some(format!("{op} needs at least 2 members: {filter}"));
            }
            members.iter().find_map(invalid)
        }
        "equals"
        | "notEquals"
        | "in"
        | "notIn"
        | "greaterThan"
        | "greaterThanOrEquals"
        | "lessThan"
        | "lessThanOrEquals"
        | "startsWith"
        | "stringContains"
        | "listContains" => match (arg["key"].as_str(), arg.get("value")) {
            (Some(_), Some(_)) => None,
            _ => Some(format!("{op} needs a key and a value: {filter}")),
        },
        other => Some(format!("unknown filter {other}")),
    }
}

/// Whether a result with `metadata` passes `filter` (already checked by [`invalid`]).
pub fn matches(filter: &Value, metadata: &Map<String, Value>) -> bool {
    let (op, arg) = filter.as_object().unwrap().iter().next().unwrap();
    match op.as_str() {
        "andAll" => arg.as_array().unwrap().iter().all(|f| matches(f, metadata)),
        "orAll" => arg.as_array().unwrap().iter().any(|f| matches(f, metadata)),
        _ => {
            let want = &arg["value"];
            let Some(have) = metadata.get(arg["key"].as_str().unwrap()) else {
                return false;
            };
            let number = |v: &Value| v.as_f64();
            let text = |v: &Value| v.as_str().map(str::to_owned);
            let list = || want.as_array().cloned().unwrap_or_default();
            let compare = |pass: fn(f64, f64) -> bool| match (number(have), number(want)) {
                (Some(a), Some(b)) => pass(a, b),
                _ => false,
            };
            match op.as_str() {
                "equals" => same(have, want),
                "notEquals" => !same(have, want),
                "in" => list().iter().any(|w| same(have, w)),
                "notIn" => !list().iter().any(|w| same(have, w)),
                "greaterThan" => compare(|a, b| a > b),
                "greaterThanOrEquals" => compare(|a, b| a >= b),
                "lessThan" => compare(|a, b| a < b),
                "lessThanOrEquals" => compare(|a, b| a <= b),
                "startsWith" => {
                    matches!((text(have), text(want)), (Some(h), Some(w)) if h.starts_with(&w))
                }
                "stringContains" => {
                    matches!((text(have), text(want)), (Some(h), Some(w)) if h.contains(&w))
                }
                "listContains" => have
                    .as_array()
                    .is_some_and(|l| l.iter().any(|h| same(h, want))),
                _ => false,
            }
        }
    }
}

/// Typed equality: numbers by value, everything else exactly, never across types.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}
