//! Span export: one run, suspended by its deadline and continued from the queue, is exported
//! to a loopback OTLP/HTTP receiver (protobuf, decoded as a collector does) as one trace: the
//! request, the run's `invoke_workflow` span per invocation, one span per step (named after its
//! node, with run_id, attempt, tokens and outcome), one GenAI `chat {model}` client span per
//! model call with its exact token counts, one `retrieval {kb}` span with the documents it
//! found, and the continuation under the span that queued it. Export is off unless a layer is
//! installed, as here (`OTEL_EXPORTER_OTLP_ENDPOINT` in Lambda).

use crate::support;

use bounded_rag::entry::{api, sqs};
use bounded_rag::otlp::{ExportSettings, Exporter, SpanContext};
use bounded_rag::runs::MemoryQueue;
use bounded_rag::store::MemoryStore;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use support::app::timed_app;
use support::llm_server::{Script, ScriptedLlm};
use support::otlp_receiver::OtlpReceiver;
use tracing_subscriber::layer::SubscriberExt;

const RUN: &str = include_str!("../events/apigw-run.json");
const CALLER_TRACE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const WORKFLOW: &str = "invoke_workflow bounded-rag";

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

#[tokio::test(flavor = "current_thread")]
async fn one_run_across_a_suspension_is_one_trace_of_nested_spans() {
    let receiver = OtlpReceiver::start().await;
    let (exporter, layer) = Exporter::new(&receiver.url, "test");
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
    let first: Vec<Value> = receiver.take().spans;

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
    let sqs_event = support::otlp_receiver::continuation(body, handed_on);
    let result = sqs::handle_batch(&app, Some(&queue), sqs_event, None).await;
    assert!(result.batch_item_failures.is_empty());
    exporter.flush().await;
    let second: Vec<Value> = receiver.take().spans;

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

    // First invocation: request > run > workflow > 3 steps; 4 model calls and 1 retrieval
    // under them.
    let steps = |spans: &[Value]| -> Vec<String> {
        spans
            .iter()
            .filter(|s| parent_name(s).as_deref() == Some(WORKFLOW))
            .map(|s| s["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        steps(&first),
        ["route_question", "kg_retrieval", "grade_documents"]
    );
    let chat = |spans: &[Value]| -> Vec<Value> {
        spans
            .iter()
            .filter(|s| attr(s, "gen_ai.operation.name") == "chat")
            .cloned()
            .collect()
    };
    assert_eq!(chat(&first).len(), 4);
    let workflow = first.iter().find(|s| s["name"] == WORKFLOW).unwrap();
    assert_eq!(parent_name(workflow).as_deref(), Some("run"));
    assert_eq!(attr(workflow, "gen_ai.operation.name"), "invoke_workflow");
    assert_eq!(attr(workflow, "openinference.span.kind"), "AGENT");
    assert_eq!(attr(workflow, "status"), "suspended");
    let run = first.iter().find(|s| s["name"] == "run").unwrap();
    assert_eq!(parent_name(run).as_deref(), Some("POST /workflow/run"));
    for span in chat(&first) {
        let step = parent_name(&span).unwrap();
        assert!(
            ["route_question", "grade_documents"].contains(&step.as_str()),
            "{step}"
        );
        assert_eq!(span["name"], "chat test-model");
        assert_eq!(span["kind"], "client");
        assert_eq!(span["error"], false);
        // (the test wrapper that charges fake time names itself)
        assert_eq!(attr(&span, "gen_ai.provider.name"), "timed");
        assert_eq!(attr(&span, "gen_ai.request.model"), "test-model");
        assert_eq!(attr(&span, "gen_ai.usage.input_tokens"), 100);
        assert_eq!(attr(&span, "gen_ai.usage.output_tokens"), 10);
        assert_eq!(
            attr(&span, "gen_ai.response.finish_reasons"),
            &json!(["stop"])
        );
        assert_eq!(attr(&span, "openinference.span.kind"), "LLM");
        assert_eq!(attr(&span, "outcome"), "ok");
        // Content capture is off: no prompt, no reply.
        assert_eq!(attr(&span, "gen_ai.input.messages"), &Value::Null);
        assert_eq!(attr(&span, "gen_ai.output.messages"), &Value::Null);
    }
    let retrieval = first
        .iter()
        .find(|s| attr(s, "gen_ai.operation.name") == "retrieval")
        .unwrap();
    assert_eq!(parent_name(retrieval).as_deref(), Some("kg_retrieval"));
    assert_eq!(attr(retrieval, "openinference.span.kind"), "RETRIEVER");
    let documents: Vec<Value> = serde_json::from_str(
        attr(retrieval, "gen_ai.retrieval.documents")
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(documents.len(), 3, "{documents:?}");
    for d in &documents {
        assert!(d["id"].is_string() && d["score"].is_number(), "{d}");
        assert!(
            d["metadata"]["source"]
                .as_str()
                .unwrap()
                .starts_with("kb://"),
            "{d}"
        );
        assert!(
            d.get("content").is_none(),
            "no passage text without content capture: {d}"
        );
    }
    let grading = first
        .iter()
        .find(|s| s["name"] == "grade_documents")
        .unwrap();
    assert_eq!(attr(grading, "node"), "grade_documents");
    assert_eq!(attr(grading, "attempt"), 1);
    assert_eq!(attr(grading, "openinference.span.kind"), "CHAIN");
    // A step's tokens are its model calls' tokens, exactly.
    assert_eq!(attr(grading, "tokens"), 330);
    assert_eq!(attr(grading, "outcome"), "ok");
    assert!(attr(grading, "run_id").is_string());

    // Continuation: sqs_record (child of the request that queued it) > run > workflow > the rest.
    let record = second.iter().find(|s| s["name"] == "sqs_record").unwrap();
    assert_eq!(parent_name(record).as_deref(), Some("POST /workflow/run"));
    assert_eq!(steps(&second), ["generate", "grade_hallucinations"]);
    assert_eq!(chat(&second).len(), 3);
    // (its budget ends again after grading: suspended once more, for the next message)
    let workflow = second.iter().find(|s| s["name"] == WORKFLOW).unwrap();
    assert_eq!(attr(workflow, "status"), "suspended");
    // Every model call of the run is a span: their tokens are the run's.
    let tokens: i64 = chat(&first)
        .iter()
        .chain(&chat(&second))
        .map(|s| {
            attr(s, "gen_ai.usage.input_tokens").as_i64().unwrap()
                + attr(s, "gen_ai.usage.output_tokens").as_i64().unwrap()
        })
        .sum();
    assert_eq!(tokens, 7 * 110);
}

/// With content capture on (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`), the
/// prompts, replies, query and passages are exported; the resource and headers the settings
/// name are sent; the model server's key is never.
#[tokio::test(flavor = "current_thread")]
async fn content_capture_exports_prompts_replies_and_passages_and_never_a_key() {
    let receiver = OtlpReceiver::start().await;
    let mut settings = ExportSettings::new(&receiver.url, "content-test");
    settings.capture_content = true;
    settings.headers = vec![("authorization".into(), "Basic c2VjcmV0".into())];
    settings.resource = vec![("openinference.project.name".into(), "rag".into())];
    let (exporter, layer) = Exporter::with_settings(Some(settings));
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = support::app::app(&llm, Arc::new(MemoryStore::new()), false);
    let event: Value = serde_json::from_str(RUN).unwrap();
    let response = api::handle(
        &app,
        None,
        lambda_http::request::from_str(&event.to_string()).unwrap(),
    )
    .await;
    assert_eq!(response.status().as_u16(), 200);
    exporter.flush().await;
    let received = receiver.take();
    assert_eq!(received.bodies.len(), 1);
    assert_eq!(received.headers[0]["authorization"], "Basic c2VjcmV0");
    let spans = &received.spans;
    assert_eq!(spans[0]["resource"]["service.name"], "content-test");
    assert_eq!(spans[0]["resource"]["openinference.project.name"], "rag");
    let chat: Vec<&Value> = spans
        .iter()
        .filter(|s| attr(s, "gen_ai.operation.name") == "chat")
        .collect();
    assert!(!chat.is_empty());
    for span in &chat {
        let input: Value =
            serde_json::from_str(attr(span, "gen_ai.input.messages").as_str().unwrap()).unwrap();
        assert_eq!(input[0]["role"], "system", "{input}");
        assert!(input[0]["parts"][0]["content"].is_string());
        let output: Value =
            serde_json::from_str(attr(span, "gen_ai.output.messages").as_str().unwrap()).unwrap();
        assert_eq!(output[0]["role"], "assistant");
    }
    let retrieval = spans
        .iter()
        .find(|s| attr(s, "gen_ai.operation.name") == "retrieval")
        .unwrap();
    assert_eq!(
        attr(retrieval, "gen_ai.retrieval.query.text"),
        "What causes patch canker in durian?"
    );
    let documents: Vec<Value> = serde_json::from_str(
        attr(retrieval, "gen_ai.retrieval.documents")
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert!(
        documents.iter().all(|d| d["content"].is_string()),
        "{documents:?}"
    );
    let workflow = spans.iter().find(|s| s["name"] == WORKFLOW).unwrap();
    assert_eq!(
        attr(workflow, "input.value"),
        "What causes patch canker in durian?"
    );
    assert!(attr(workflow, "output.value")
        .as_str()
        .is_some_and(|a| !a.is_empty()));
    // No credential of the request, and no export header, is in any span.
    for body in &received.bodies {
        let text = String::from_utf8_lossy(body);
        for secret in [
            "IQoJb3JpZ2luX2VjEXAMPLETOKEN",
            "5d672d79c15b1316",
            "c2VjcmV0",
        ] {
            assert!(!text.contains(secret), "{secret} inside the spans");
        }
    }
}
