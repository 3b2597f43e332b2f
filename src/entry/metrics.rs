//! CloudWatch embedded-metric-format (EMF) lines: one JSON line on stdout per finished
//! invocation of a run, which CloudWatch turns into metrics without any API call.

use crate::rag::RunResponse;
use serde_json::{json, Map, Value};

/// Metric namespace.
pub const NAMESPACE: &str = "BoundedRag";

/// The EMF document for one run invocation: steps, retries, rewrites, regenerations,
/// fallbacks, limits hit and model latency, with the route as dimension.
pub fn run_metrics(response: &RunResponse, timestamp_ms: u64) -> Value {
    let m = &response.metadata;
    let route = m.route.map(|r| r.as_str()).unwrap_or("none");
    let model_ms: f64 = response
        .workflow_steps
        .iter()
        .filter(|s| s.name != "kg_retrieval" && s.name != "web_search")
        .map(|s| s.processing_time * 1000.0)
        .sum();
    let mut metrics = vec![
        ("Steps", "Count", json!(m.total_steps)),
        (
            "InfrastructureRetries",
            "Count",
            json!(m.infrastructure_retries),
        ),
        (
            "QueryRewrites",
            "Count",
            json!(m.query_transformation_retry_count),
        ),
        ("Regenerations", "Count", json!(m.hallucination_retry_count)),
        ("WebFallbacks", "Count", json!(u32::from(m.web_fallback))),
        ("LimitsHit", "Count", json!(m.limits_hit.len())),
        ("ModelLatency", "Milliseconds", json!(model_ms.round())),
    ];
    for limit in [
        "step_limit",
        "deadline",
        "max_retries",
        "max_regenerations",
        "no_sources",
    ] {
        let hit = m.limits_hit.iter().any(|l| l == limit);
        metrics.push((limit_metric(limit), "Count", json!(u32::from(hit))));
    }
    let mut doc = Map::new();
    doc.insert(
        "_aws".into(),
        json!({
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [["Route"]],
                "Metrics": metrics.iter().map(|(name, unit, _)| json!({"Name": name, "Unit": unit})).collect::<Vec<_>>(),
            }]
        }),
    );
    doc.insert("Route".into(), json!(route));
    for (name, _, value) in metrics {
        doc.insert(name.into(), value);
    }
    doc.insert("run_id".into(), json!(response.run_id));
    doc.insert("status".into(), json!(response.status));
    Value::Object(doc)
}

fn limit_metric(limit: &str) -> &'static str {
    match limit {
        "step_limit" => "LimitStepLimit",
        "deadline" => "LimitDeadline",
        "max_retries" => "LimitMaxRetries",
        "max_regenerations" => "LimitMaxRegenerations",
        _ => "LimitNoSources",
    }
}

/// Prints the EMF line of a run on stdout.
pub fn emit_run(response: &RunResponse, timestamp_ms: u64) {
    println!("{}", run_metrics(response, timestamp_ms));
}
