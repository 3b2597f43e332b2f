//! The GenAI client metrics of the OpenTelemetry conventions, as CloudWatch embedded-metric-
//! format lines beside the run metrics ([`crate::entry::metrics`]): per model (operation,
//! provider, model) `gen_ai.client.token.usage` (by `gen_ai.token.type`, `input` or `output`)
//! and `gen_ai.client.operation.duration` (seconds), one value per model or embeddings call
//! of the invocation, from the same spans that are exported (so both agree). A reply from the
//! response cache made no call and is not counted.

use super::attributes::AttrValue;
use super::span_data::SpanData;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The CloudWatch namespace of every metric: the run metrics' ([`crate::entry::metrics`]) and these.
pub(crate) const METRICS_NAMESPACE: &str = "BoundedRag";

/// What one call of a model adds to its metrics.
#[derive(Debug, Default)]
struct Calls {
    input: Vec<i64>,
    output: Vec<i64>,
    seconds: Vec<f64>,
}

/// The EMF documents of the model and embeddings calls among `spans` (none without such calls).
pub(crate) fn genai_metrics(spans: &[SpanData], timestamp_ms: u64) -> Vec<Value> {
    let mut by_model: BTreeMap<(String, String, String), Calls> = BTreeMap::new();
    for span in spans {
        let Some(operation) = span.str_attribute("gen_ai.operation.name") else {
            continue;
        };
        if !matches!(operation, "chat" | "embeddings")
            || span.attribute("bounded_rag.cache_hit") == Some(&AttrValue::Bool(true))
        {
            continue;
        }
        let key = (
            operation.to_owned(),
            span.str_attribute("gen_ai.provider.name")
                .unwrap_or("")
                .to_owned(),
            span.str_attribute("gen_ai.request.model")
                .unwrap_or("")
                .to_owned(),
        );
        let calls = by_model.entry(key).or_default();
        let tokens = |key: &str| match span.attribute(key) {
            Some(AttrValue::Int(n)) => Some(*n),
            _ => None,
        };
        calls.input.extend(tokens("gen_ai.usage.input_tokens"));
        calls.output.extend(tokens("gen_ai.usage.output_tokens"));
        calls
            .seconds
            .push(span.end.saturating_sub(span.start) as f64 / 1e9);
    }
    let mut lines = Vec::new();
    for ((operation, provider, model), calls) in by_model {
        let dimensions = json!({
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
        });
        let model_dims = [
            "gen_ai.operation.name",
            "gen_ai.provider.name",
            "gen_ai.request.model",
        ];
        for (token_type, values) in [("input", &calls.input), ("output", &calls.output)] {
            if values.is_empty() {
                continue;
            }
            let mut doc = document(
                timestamp_ms,
                &[&model_dims[..], &["gen_ai.token.type"]].concat(),
                "gen_ai.client.token.usage",
                "Count",
                json!(values),
            );
            merge(&mut doc, &dimensions);
            doc["gen_ai.token.type"] = json!(token_type);
            lines.push(doc);
        }
        let mut doc = document(
            timestamp_ms,
            &model_dims,
            "gen_ai.client.operation.duration",
            "Seconds",
            json!(calls.seconds),
        );
        merge(&mut doc, &dimensions);
        lines.push(doc);
    }
    lines
}

/// One EMF document of one metric (its values, one per call) over one dimension set.
fn document(
    timestamp_ms: u64,
    dimensions: &[&str],
    name: &str,
    unit: &str,
    values: Value,
) -> Value {
    json!({
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": METRICS_NAMESPACE,
                "Dimensions": [dimensions],
                "Metrics": [{ "Name": name, "Unit": unit }],
            }],
        },
        name: values,
    })
}

fn merge(doc: &mut Value, fields: &Value) {
    if let (Some(doc), Some(fields)) = (doc.as_object_mut(), fields.as_object()) {
        for (k, v) in fields {
            doc.insert(k.clone(), v.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::otlp::context::SpanContext;

    fn call(model: &str, input: i64, output: i64, cached: bool, millis: u128) -> SpanData {
        let s = |v: &str| AttrValue::Str(v.to_owned());
        SpanData {
            context: SpanContext {
                trace_id: 1,
                span_id: 2,
            },
            parent: None,
            name: format!("chat {model}"),
            client: true,
            start: 1_000_000_000,
            end: 1_000_000_000 + millis * 1_000_000,
            attributes: vec![
                ("gen_ai.operation.name".into(), s("chat")),
                ("gen_ai.provider.name".into(), s("openai")),
                ("gen_ai.request.model".into(), s(model)),
                ("gen_ai.usage.input_tokens".into(), AttrValue::Int(input)),
                ("gen_ai.usage.output_tokens".into(), AttrValue::Int(output)),
                ("bounded_rag.cache_hit".into(), AttrValue::Bool(cached)),
            ],
        }
    }

    #[test]
    fn each_model_gets_token_usage_by_type_and_duration_per_call() {
        let spans = [
            call("a", 100, 5, false, 300),
            call("a", 40, 2, false, 100),
            call("a", 0, 0, true, 1),
            call("b", 7, 1, false, 50),
        ];
        let lines = genai_metrics(&spans, 42);
        assert_eq!(lines.len(), 6, "{lines:#?}");
        let a_input = &lines[0];
        assert_eq!(a_input["gen_ai.request.model"], "a");
        assert_eq!(a_input["gen_ai.token.type"], "input");
        assert_eq!(a_input["gen_ai.client.token.usage"], json!([100, 40]));
        assert_eq!(
            a_input["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0],
            json!([
                "gen_ai.operation.name",
                "gen_ai.provider.name",
                "gen_ai.request.model",
                "gen_ai.token.type"
            ])
        );
        assert_eq!(lines[1]["gen_ai.client.token.usage"], json!([5, 2]));
        assert_eq!(
            lines[2]["gen_ai.client.operation.duration"],
            json!([0.3, 0.1])
        );
        assert_eq!(
            lines[2]["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Unit"],
            "Seconds"
        );
        assert_eq!(lines[3]["gen_ai.request.model"], "b");
        assert!(genai_metrics(&[], 42).is_empty());
    }
}
