//! CloudWatch embedded-metric-format (EMF) lines: one JSON line on stdout per finished
//! invocation of a run, which CloudWatch turns into metrics without any API call.

use crate::rag::{LimitHit, RagNode, RunResponse};
use serde_json::{json, Map, Value};

/// Metric namespace, shared with the GenAI metrics.
const NAMESPACE: &str = crate::otlp::METRICS_NAMESPACE;

/// The EMF document for one run invocation: steps, retries, rewrites, regenerations,
/// fallbacks, limits hit, model latency (summed over steps, so concurrent branches add up),
/// model calls, cache hits, tokens and speculation, with the route as dimension; and `Runs` (1)
/// by `Status` and by route and status, which the dashboard and the failed-runs alarm
/// (`template.yaml`) read.
pub(crate) fn run_metrics(response: &RunResponse, timestamp_ms: u64) -> Value {
    let m = &response.metadata;
    let route = m.route.map(|r| r.as_str()).unwrap_or("none");
    let model_ms: f64 = response
        .workflow_steps
        .iter()
        .filter(|s| !matches!(s.name, RagNode::KgRetrieval | RagNode::WebSearch))
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
        ("ModelCalls", "Count", json!(m.model_calls)),
        ("CacheHits", "Count", json!(m.cache_hits)),
        ("PromptTokens", "Count", json!(m.tokens.prompt)),
        ("CompletionTokens", "Count", json!(m.tokens.completion)),
        ("Tokens", "Count", json!(m.tokens.total)),
        ("SpeculationsStarted", "Count", json!(m.speculation.started)),
        ("SpeculationsUsed", "Count", json!(m.speculation.used)),
        (
            "SpeculationsDiscarded",
            "Count",
            json!(m.speculation.discarded),
        ),
        (
            "SpeculationWastedTokens",
            "Count",
            json!(m.speculation.wasted_tokens),
        ),
    ];
    for limit in LimitHit::ALL {
        let hit = m.limits_hit.contains(&limit);
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
            }, {
                "Namespace": NAMESPACE,
                "Dimensions": [["Status"], ["Route", "Status"]],
                "Metrics": [{"Name": "Runs", "Unit": "Count"}],
            }]
        }),
    );
    doc.insert("Route".into(), json!(route));
    doc.insert("Status".into(), json!(response.status));
    doc.insert("Runs".into(), json!(1));
    for (name, _, value) in metrics {
        doc.insert(name.into(), value);
    }
    doc.insert("run_id".into(), json!(response.run_id));
    doc.insert("status".into(), json!(response.status));
    doc.insert("tokens_estimated".into(), json!(m.tokens.estimated));
    Value::Object(doc)
}

/// Exhaustive, so a new limit does not compile until it has a metric.
fn limit_metric(limit: LimitHit) -> &'static str {
    match limit {
        LimitHit::StepLimit => "LimitStepLimit",
        LimitHit::Deadline => "LimitDeadline",
        LimitHit::TokenBudget => "LimitTokenBudget",
        LimitHit::MaxQueryRewrites => "LimitMaxRetries",
        LimitHit::MaxRegenerations => "LimitMaxRegenerations",
        LimitHit::NoSources => "LimitNoSources",
        LimitHit::AnswerLength => "LimitAnswerLength",
        LimitHit::ModelUnavailable => "LimitModelUnavailable",
        LimitHit::InterruptTimeout => "LimitInterruptTimeout",
        LimitHit::ModelUnusable => "LimitModelUnusable",
    }
}

/// The EMF document of one sweep: `RunsRequeued`, `LapsedLeases` and `SweepFailures`, without
/// dimensions (the re-queue alarm reads `RunsRequeued`).
pub(crate) fn sweep_metrics(requeued: u32, lapsed: u32, failed: u32, timestamp_ms: u64) -> Value {
    json!({
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [[]],
                "Metrics": [
                    {"Name": "RunsRequeued", "Unit": "Count"},
                    {"Name": "LapsedLeases", "Unit": "Count"},
                    {"Name": "SweepFailures", "Unit": "Count"},
                ],
            }]
        },
        "RunsRequeued": requeued,
        "LapsedLeases": lapsed,
        "SweepFailures": failed,
    })
}

/// Prints the EMF line of a run on stdout.
pub(crate) fn emit_run(response: &RunResponse, timestamp_ms: u64) {
    println!("{}", run_metrics(response, timestamp_ms));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::StepRecord;
    use crate::llm::DataSource;
    use crate::rag::{Metadata, RunStatus, Tokens};

    #[test]
    fn emf_document_declares_every_metric_it_carries() {
        let step = |name: RagNode, t: f64| StepRecord {
            name,
            timestamp: String::new(),
            processing_time: t,
            details: serde_json::Value::Null,
            usage: crate::usage::Usage::default(),
        };
        let response = RunResponse {
            success: true,
            status: RunStatus::BestEffort,
            run_id: "r1".into(),
            answer: "a".into(),
            question: "q".into(),
            workflow_steps: vec![
                step(RagNode::RouteQuestion, 0.25),
                step(RagNode::KgRetrieval, 1.0),
                step(RagNode::Generate, 0.5),
            ],
            citations: vec![],
            metadata: Metadata {
                total_steps: 3,
                total_processing_time: 1.75,
                limits_hit: vec![LimitHit::MaxRegenerations],
                query_transformation_retry_count: 1,
                hallucination_retry_count: 3,
                route: Some(DataSource::KgRetrieval),
                route_overruled: false,
                web_fallback: true,
                web_search_unavailable: false,
                infrastructure_retries: 2,
                provider: "offline".into(),
                tokens: Tokens {
                    prompt: 900,
                    completion: 60,
                    total: 960,
                    estimated: false,
                },
                model_calls: 7,
                cache_hits: 1,
                kb_version: None,
                retrieval: None,
                attribution: None,
                speculation: crate::rag::SpeculationStats {
                    started: 1,
                    used: 0,
                    discarded: 1,
                    wasted_tokens: 120,
                },
                thread_id: None,
                turn: None,
                standalone_question: None,
                clarified_question: None,
                approvals: Vec::new(),
                forked_from: None,
            },
            error: None,
            interrupt: None,
        };
        let doc = run_metrics(&response, 42);
        let declared: Vec<&str> = doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].as_str().unwrap())
            .collect();
        for name in &declared {
            assert!(doc.get(*name).is_some(), "{name} declared but missing");
        }
        assert_eq!(doc["_aws"]["Timestamp"], 42);
        assert_eq!(doc["Route"], "kg_retrieval");
        assert_eq!(
            doc["ModelLatency"], 750.0,
            "retrieval time is not model time"
        );
        assert_eq!(doc["InfrastructureRetries"], 2);
        assert_eq!(doc["WebFallbacks"], 1);
        assert_eq!(doc["LimitMaxRegenerations"], 1);
        assert_eq!(doc["LimitDeadline"], 0);
        assert_eq!(doc["LimitTokenBudget"], 0);
        assert_eq!(
            (doc["Tokens"].as_u64(), doc["ModelCalls"].as_u64()),
            (Some(960), Some(7))
        );
        assert_eq!(doc["CacheHits"], 1);
        assert_eq!(
            (
                doc["SpeculationsDiscarded"].as_u64(),
                doc["SpeculationWastedTokens"].as_u64()
            ),
            (Some(1), Some(120))
        );
        let runs = &doc["_aws"]["CloudWatchMetrics"][1];
        assert_eq!(runs["Metrics"][0]["Name"], "Runs");
        assert_eq!(runs["Dimensions"], json!([["Status"], ["Route", "Status"]]));
        assert_eq!(
            (&doc["Runs"], &doc["Status"]),
            (&json!(1), &json!("best_effort"))
        );
    }

    #[test]
    fn a_sweep_reports_its_requeues() {
        let doc = sweep_metrics(2, 3, 1, 7);
        assert_eq!(
            doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([[]])
        );
        assert_eq!(
            (&doc["RunsRequeued"], &doc["LapsedLeases"]),
            (&json!(2), &json!(3))
        );
        assert_eq!(doc["SweepFailures"], 1);
    }
}
