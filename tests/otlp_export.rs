//! Span export: one run, suspended by its deadline and continued from the queue, is exported
//! to a loopback OTLP/HTTP receiver as one trace: the request, the run, one span per step
//! (named after its node, with run_id, attempt, tokens and outcome), one per model call and
//! one per retrieval under their step, and the continuation under the span that queued it.
//! Export is off unless a layer is installed, as here (`OTEL_EXPORTER_OTLP_ENDPOINT` in Lambda).

use crate::support;

use axum::routing::post;
use axum::{Json, Router};
use bounded_rag::entry::{api, sqs};
use bounded_rag::otlp::{Exporter, SpanContext};
use bounded_rag::runs::MemoryQueue;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::app::timed_app;
use support::llm_server::{Script, ScriptedLlm};
use tracing_subscriber::layer::SubscriberExt;

const RUN: &str = include_str!("../events/apigw-run.json");
const CALLER_TRACE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// A loopback OTLP/HTTP receiver keeping every span it is sent.
async fn receiver() -> (String, Arc<Mutex<Vec<Value>>>) {
    let spans = Arc::new(Mutex::new(Vec::new()));
    let kept = spans.clone();
    let app = Router::new().route(
        "/v1/traces",
        post(move |Json(body): Json<Value>| {
            let kept = kept.clone();
            async move {
                for rs in body["resourceSpans"].as_array().unwrap() {
                    for ss in rs["scopeSpans"].as_array().unwrap() {
                        kept.lock()
                            .unwrap()
                            .extend(ss["spans"].as_array().unwrap().clone());
                    }
                }
                Json(json!({}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, spans)
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    let attrs = span["attributes"].as_array()?;
    let kv = attrs.iter().find(|kv| kv["key"] == key)?;
    Some(&kv["value"])
}

#[tokio::test(flavor = "current_thread")]
async fn one_run_across_a_suspension_is_one_trace_of_nested_spans() {
    let (url, received) = receiver().await;
    let (exporter, layer) = Exporter::new(&url, "test");
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));

    let llm = ScriptedLlm::start(Script::defaults()).await;
    // Model calls of 200 ms in a 1 s budget: route + 3 gradings, then suspended before generate.
    let (app, _clock) = timed_app(&llm, Duration::from_millis(200), Duration::from_secs(1));
    let queue = MemoryQueue::default();
    let mut event: Value = serde_json::from_str(RUN).unwrap();
    event["headers"]["traceparent"] = CALLER_TRACE.into();
    let response = api::handle(
        &app,
        Some(&queue),
        lambda_http::request::from_str(&event.to_string()).unwrap(),
    )
    .await;
    assert_eq!(response.status().as_u16(), 202);
    exporter.flush().await;
    let first: Vec<Value> = std::mem::take(&mut *received.lock().unwrap());

    // The worker continues it, with the trace the SQS message carried (`SqsQueue` sets the
    // `traceparent` attribute from the span that sends it: here, the request's).
    let request_span = first
        .iter()
        .find(|s| s["name"] == "POST /workflow/run")
        .unwrap();
    let handed_on = SpanContext {
        trace_id: u128::from_str_radix(request_span["traceId"].as_str().unwrap(), 16).unwrap(),
        span_id: u64::from_str_radix(request_span["spanId"].as_str().unwrap(), 16).unwrap(),
    };
    let body = serde_json::to_string(&queue.sent()[0]).unwrap();
    let sqs_event = serde_json::from_value(json!({ "Records": [{
        "messageId": "m1", "body": body, "eventSource": "aws:sqs",
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {"traceparent": {"stringValue": handed_on.traceparent(), "dataType": "String"}},
    }]}))
    .unwrap();
    let result = sqs::handle_batch(&app, Some(&queue), sqs_event, None).await;
    assert!(result.batch_item_failures.is_empty());
    exporter.flush().await;
    let second: Vec<Value> = std::mem::take(&mut *received.lock().unwrap());

    let all: Vec<&Value> = first.iter().chain(&second).collect();
    let by_id: HashMap<&str, &Value> = all
        .iter()
        .map(|s| (s["spanId"].as_str().unwrap(), *s))
        .collect();
    let parent_name = |span: &Value| {
        let parent = span["parentSpanId"].as_str()?;
        by_id
            .get(parent)
            .map(|p| p["name"].as_str().unwrap().to_owned())
    };
    // One trace: the caller's.
    for span in &all {
        assert_eq!(
            span["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736",
            "{span}"
        );
    }
    assert_eq!(
        request_span["parentSpanId"], "00f067aa0ba902b7",
        "child of the caller's span"
    );
    let names = |spans: &[Value], name: &str| spans.iter().filter(|s| s["name"] == name).count();

    // First invocation: request > run > 3 steps; 4 model calls and 1 retrieval under them.
    let steps = |spans: &[Value]| -> Vec<String> {
        spans
            .iter()
            // (the worker's `run` span holds the service's own `run` span)
            .filter(|s| s["name"] != "run" && parent_name(s).as_deref() == Some("run"))
            .map(|s| s["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        steps(&first),
        ["route_question", "kg_retrieval", "grade_documents"]
    );
    assert_eq!(names(&first, "model"), 4);
    assert_eq!(names(&first, "retrieval"), 1);
    let run = first.iter().find(|s| s["name"] == "run").unwrap();
    assert_eq!(parent_name(run).as_deref(), Some("POST /workflow/run"));
    for span in first.iter().filter(|s| s["name"] == "model") {
        let step = parent_name(span).unwrap();
        assert!(
            ["route_question", "grade_documents"].contains(&step.as_str()),
            "{step}"
        );
        assert_eq!(attr(span, "outcome").unwrap()["stringValue"], "ok");
        assert_eq!(attr(span, "tokens").unwrap()["intValue"], "110");
    }
    let retrieval = first.iter().find(|s| s["name"] == "retrieval").unwrap();
    assert_eq!(parent_name(retrieval).as_deref(), Some("kg_retrieval"));
    let grading = first
        .iter()
        .find(|s| s["name"] == "grade_documents")
        .unwrap();
    assert_eq!(
        attr(grading, "node").unwrap()["stringValue"],
        "grade_documents"
    );
    assert_eq!(attr(grading, "attempt").unwrap()["intValue"], "1");
    assert_eq!(attr(grading, "tokens").unwrap()["intValue"], "330");
    assert_eq!(attr(grading, "outcome").unwrap()["stringValue"], "ok");
    assert!(attr(grading, "run_id").is_some());

    // Continuation: sqs_record (child of the request that queued it) > run > the rest.
    let record = second.iter().find(|s| s["name"] == "sqs_record").unwrap();
    assert_eq!(parent_name(record).as_deref(), Some("POST /workflow/run"));
    assert_eq!(steps(&second), ["generate", "grade_hallucinations"]);
    assert_eq!(names(&second, "model"), 3);
}
