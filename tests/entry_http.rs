//! The HTTP function's handler, driven with the real API Gateway v2 events of `events/`.

use crate::support;

use bounded_rag::entry::{api, sqs};
use bounded_rag::rag::RunStatus;
use bounded_rag::runs::{MemoryQueue, WorkQueue};
use bounded_rag::store::MemoryStore;
use lambda_http::Body;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use support::api_event::{with_body, with_header};
use support::app::{app, timed_app};
use support::llm_server::{Script, ScriptedLlm};

const RUN: &str = include_str!("../events/apigw-run.json");
const RUN_FULL: &str = include_str!("../events/apigw-run-full.json");
const RUN_BAD: &str = include_str!("../events/apigw-run-bad.json");
const RUN_IDEMPOTENT: &str = include_str!("../events/apigw-run-idempotent.json");
const RUNS_START: &str = include_str!("../events/apigw-runs-start.json");
const RUNS_GET: &str = include_str!("../events/apigw-runs-get.json");
const NOT_FOUND: &str = include_str!("../events/apigw-not-found.json");
/// The same routes called by another caller (JWT authorizer, `sub` claim) than the IAM
/// principal of the other events.
const RUN_JWT: &str = include_str!("../events/apigw-run-jwt.json");
const RUNS_GET_JWT: &str = include_str!("../events/apigw-runs-get-jwt.json");
/// A function URL without auth: the anonymous caller.
const URL_RUN_ANONYMOUS: &str = include_str!("../events/apigw-url-run-anonymous.json");

fn request(event: &str) -> lambda_http::Request {
    lambda_http::request::from_str(event).expect("event parses")
}

/// The GET event, pointed at another run id.
fn get_event(run_id: &str) -> String {
    RUNS_GET.replace("00000000-0000-4000-8000-000000000001", run_id)
}

/// The JWT caller's GET event, pointed at a run id.
fn get_event_jwt(run_id: &str) -> String {
    RUNS_GET_JWT.replace("00000000-0000-4000-8000-000000000001", run_id)
}

/// The GET event of a function URL without auth (no authorizer in the request context).
fn get_event_anonymous(run_id: &str) -> String {
    let mut v: Value = serde_json::from_str(&get_event(run_id)).unwrap();
    v["requestContext"]
        .as_object_mut()
        .unwrap()
        .remove("authorizer");
    v.to_string()
}

/// Like [`call`], with the response headers.
async fn call_with_headers(
    app: &bounded_rag::entry::App,
    queue: Option<&dyn WorkQueue>,
    event: &str,
) -> (u16, Value, lambda_http::http::HeaderMap) {
    let response = api::handle(app, queue, request(event)).await;
    let status = response.status().as_u16();
    let body = api::body_json(&response);
    (status, body, response.headers().clone())
}

async fn call(
    app: &bounded_rag::entry::App,
    queue: Option<&dyn WorkQueue>,
    event: &str,
) -> (u16, Value) {
    let response = api::handle(app, queue, request(event)).await;
    let status = response.status().as_u16();
    let body = match response.body() {
        Body::Text(t) => serde_json::from_str(t).unwrap(),
        other => panic!("unexpected body {other:?}"),
    };
    (status, body)
}

#[tokio::test]
async fn sync_run_answers_with_citations_and_leaves_a_checkpoint() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let store = Arc::new(MemoryStore::new());
    let app = app(&llm, store, false);
    let (status, body) = call(&app, None, RUN).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["success"], true);
    assert_eq!(body["question"], "What causes patch canker in durian?");
    assert_eq!(body["metadata"]["total_steps"], 6);
    assert_eq!(body["workflow_steps"].as_array().unwrap().len(), 6);
    assert!(!body["citations"].as_array().unwrap().is_empty());
    assert_eq!(llm.total_calls(), 7);

    let run_id = body["run_id"].as_str().unwrap();
    let (status, stored) = call(&app, None, &get_event(run_id)).await;
    assert_eq!(status, 200);
    assert_eq!(stored, body, "GET returns the stored answer");
}

#[tokio::test]
async fn every_request_field_is_accepted() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), false);
    let (status, body) = call(&app, None, RUN_FULL).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn bad_input_gets_400_naming_the_field_and_no_model_call() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), false);
    let (status, body) = call(&app, None, RUN_BAD).await;
    assert_eq!(status, 400);
    assert_eq!(body["field"], "question");
    for (payload, field) in [
        (
            r#"{"question":"q","n_retrieved_documents":11}"#,
            "n_retrieved_documents",
        ),
        (r#"{"question":"q","unknown":1}"#, "unknown"),
        (r#"not json"#, "body"),
    ] {
        let (status, body) = call(&app, None, &with_body(RUN, payload)).await;
        assert_eq!(
            (status, body["field"].as_str()),
            (400, Some(field)),
            "{payload}"
        );
    }
    let big = format!(r#"{{"question":"{}"}}"#, "x".repeat(70_000));
    let (status, body) = call(&app, None, &with_body(RUN, &big)).await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(llm.total_calls(), 0);
}

#[tokio::test]
async fn unknown_routes_and_runs_are_404() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), false);
    let (status, _) = call(&app, None, NOT_FOUND).await;
    assert_eq!(status, 404);
    let (status, body) = call(&app, None, RUNS_GET).await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test]
async fn the_same_idempotency_key_twice_gives_one_run_and_one_call_per_step() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), false);
    let (s1, first) = call(&app, None, RUN_IDEMPOTENT).await;
    let (s2, second) = call(&app, None, RUN_IDEMPOTENT).await;
    assert_eq!((s1, s2), (200, 200));
    assert_eq!(first["run_id"], second["run_id"]);
    assert_eq!(first, second);
    assert_eq!(llm.total_calls(), 7, "the repeat made no model call");

    // the same key with another body is refused
    let other = with_body(RUN_IDEMPOTENT, r#"{"question":"Something else?"}"#);
    let (status, body) = call(&app, None, &other).await;
    assert_eq!(status, 422, "{body}");
}

#[tokio::test]
async fn async_run_is_queued_then_finished_by_the_worker() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), true);
    let queue = MemoryQueue::default();
    let (status, body) = call(&app, Some(&queue), RUNS_START).await;
    assert_eq!(status, 202, "{body}");
    let run_id = body["run_id"].as_str().unwrap().to_owned();
    assert_eq!(body["status_url"], format!("/workflow/runs/{run_id}"));
    assert_eq!(llm.total_calls(), 0, "nothing runs in the API call");

    let (status, pending) = call(&app, Some(&queue), &get_event(&run_id)).await;
    assert_eq!((status, pending["status"].as_str()), (200, Some("running")));

    let sent = queue.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].run_id, run_id);
    assert!(sent[0].request.is_some());
    let event = support_sqs_event(&[serde_json::to_string(&sent[0]).unwrap()]);
    let result = sqs::handle_batch(&app, Some(&queue), event, None).await;
    assert!(result.batch_item_failures.is_empty());

    let (_, done) = call(&app, Some(&queue), &get_event(&run_id)).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(llm.total_calls(), 7);
}

#[tokio::test]
async fn async_runs_without_a_queue_are_refused_clearly() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), false);
    let (status, body) = call(&app, None, RUNS_START).await;
    assert_eq!(status, 501);
    assert!(body["message"].as_str().unwrap().contains("WORK_QUEUE_URL"));
}

#[tokio::test]
async fn a_run_out_of_budget_answers_202_and_continues_via_the_queue_to_the_same_answer() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    // 200 ms per model call, 700 ms per invocation: several continuations are needed.
    let (app, _clock) = timed_app(&llm, Duration::from_millis(200), Duration::from_millis(700));
    let queue = MemoryQueue::default();
    let (status, body) = call(&app, Some(&queue), RUN).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["status"], "suspended");
    let run_id = body["run_id"].as_str().unwrap().to_owned();

    let mut delivered = 0;
    while delivered < queue.sent().len() {
        let message = queue.sent()[delivered].clone();
        delivered += 1;
        assert_eq!(message.run_id, run_id);
        assert!(
            message.request.is_none(),
            "a continuation carries only the run id"
        );
        let event = support_sqs_event(&[serde_json::to_string(&message).unwrap()]);
        let result = sqs::handle_batch(&app, Some(&queue), event, None).await;
        assert!(result.batch_item_failures.is_empty());
        assert!(delivered < 20, "continuations are bounded");
    }
    assert!(delivered >= 2, "needed {delivered} continuations");
    let (_, done) = call(&app, Some(&queue), &get_event(&run_id)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["answer"], "Scripted answer [1].");
    assert_eq!(done["metadata"]["total_steps"], 6);
    // no completed step ran twice: exactly one uninterrupted run's calls
    assert_eq!(llm.total_calls(), 7);
    assert_eq!(llm.calls("route_query"), 1);
    let run = app.workflow().status(&run_id).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
}

#[tokio::test]
async fn another_callers_run_is_404_exactly_like_a_missing_one() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), false);
    // The IAM principal of events/apigw-run.json starts a run.
    let (status, body) = call(&app, None, RUN).await;
    assert_eq!(status, 200, "{body}");
    let run_id = body["run_id"].as_str().unwrap();

    let (status, own) = call(&app, None, &get_event(run_id)).await;
    assert_eq!((status, &own), (200, &body));

    let missing = "00000000-0000-4000-8000-00000000dead";
    let (_, not_there) = call(&app, None, &get_event(missing)).await;
    for other in [get_event_jwt(run_id), get_event_anonymous(run_id)] {
        let (status, answer) = call(&app, None, &other).await;
        assert_eq!(status, 404, "{answer}");
        assert_eq!(answer["error"], "not_found");
        // Nothing tells "someone else's" from "no such run": same text, but for the id.
        assert_eq!(
            answer["message"].as_str().unwrap().replace(run_id, "ID"),
            not_there["message"]
                .as_str()
                .unwrap()
                .replace(missing, "ID"),
        );
    }

    // The JWT caller's own run is readable by it, and 404 for the IAM principal.
    let (status, theirs) = call(&app, None, RUN_JWT).await;
    assert_eq!(status, 200, "{theirs}");
    let their_id = theirs["run_id"].as_str().unwrap();
    assert_eq!(call(&app, None, &get_event_jwt(their_id)).await.0, 200);
    assert_eq!(call(&app, None, &get_event(their_id)).await.0, 404);
}

#[tokio::test]
async fn unauthenticated_function_url_requests_are_one_anonymous_caller() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let store = Arc::new(MemoryStore::new());
    let app = app(&llm, store, false);
    let (status, body) = call(&app, None, URL_RUN_ANONYMOUS).await;
    assert_eq!(status, 200, "{body}");
    let run_id = body["run_id"].as_str().unwrap();
    assert_eq!(call(&app, None, &get_event_anonymous(run_id)).await.0, 200);
    assert_eq!(call(&app, None, &get_event(run_id)).await.0, 404);

    // A checkpoint written before callers were recorded has no caller: it is anonymous.
    let old = "00000000-0000-4000-8000-0000000000aa";
    app.workflow()
        .submit(old, bounded_rag::rag::RunRequest::new("q"))
        .await
        .unwrap();
    let stored = app
        .runs()
        .store()
        .get(&format!("run#{old}"))
        .await
        .unwrap()
        .unwrap();
    assert!(!String::from_utf8_lossy(&stored.body).contains("caller"));
    assert_eq!(call(&app, None, &get_event_anonymous(old)).await.0, 200);
    assert_eq!(call(&app, None, &get_event(old)).await.0, 404);
}

#[tokio::test]
async fn an_idempotency_key_outside_the_contract_is_refused_naming_the_header() {
    // Found by schemathesis (`negative_data_rejection`): a key with a tab inside
    // (`FRuBqrVV14\t;o9`) was accepted, though openapi.yaml's pattern allows printable ASCII
    // only. Spaces inside a key are printable, and allowed.
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), false);
    let (status, body) = call(&app, None, &with_header(RUN, "idempotency-key", "a\tb")).await;
    assert_eq!(
        (status, body["field"].as_str()),
        (400, Some("Idempotency-Key"))
    );
    assert_eq!(llm.total_calls(), 0);
    let (status, body) = call(&app, None, &with_header(RUN, "idempotency-key", "a b")).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn idempotency_keys_are_scoped_per_caller() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), false);
    let jwt_idempotent = with_header(RUN_JWT, "idempotency-key", "order-7");
    let iam_idempotent = with_header(RUN, "idempotency-key", "order-7");

    let (s1, iam_first) = call(&app, None, &iam_idempotent).await;
    let (s2, jwt_first) = call(&app, None, &jwt_idempotent).await;
    assert_eq!((s1, s2), (200, 200), "{iam_first} {jwt_first}");
    assert_ne!(
        iam_first["run_id"], jwt_first["run_id"],
        "one key, two callers: two runs"
    );
    assert_eq!(llm.total_calls(), 14);

    // Each caller's repeat finds its own run, and makes no model call.
    let (_, iam_again) = call(&app, None, &iam_idempotent).await;
    let (_, jwt_again) = call(&app, None, &jwt_idempotent).await;
    assert_eq!(iam_again["run_id"], iam_first["run_id"]);
    assert_eq!(jwt_again["run_id"], jwt_first["run_id"]);
    assert_eq!(llm.total_calls(), 14);

    // The same key with another body is refused for that caller only.
    let other_body = with_body(&jwt_idempotent, r#"{"question":"Something else?"}"#);
    let (status, body) = call(&app, None, &other_body).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("new key"),
        "{body}"
    );
}

#[tokio::test]
async fn past_the_active_run_cap_a_caller_gets_429_with_retry_after_until_a_run_ends() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app =
        app(&llm, Arc::new(MemoryStore::new()), true).with_max_active_runs_per_caller(Some(1));
    let queue = MemoryQueue::default();

    // An asynchronous run stays active (running) until the worker finishes it.
    let (status, started) = call(&app, Some(&queue), RUNS_START).await;
    assert_eq!(status, 202, "{started}");
    let first = started["run_id"].as_str().unwrap().to_owned();

    let keyed = with_header(RUNS_START, "idempotency-key", "retry-me");
    for event in [RUNS_START, RUN, keyed.as_str()] {
        let (status, body, headers) = call_with_headers(&app, Some(&queue), event).await;
        assert_eq!(status, 429, "{body}");
        assert_eq!(body["error"], "too_many_active_runs");
        assert_eq!(body["limit"], 1);
        assert_eq!(body["active_run_ids"], serde_json::json!([first]));
        let retry_after: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert_eq!(body["retry_after_seconds"], retry_after);
        assert!((1..=30).contains(&retry_after), "{retry_after}");
        let message = body["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("retry in {retry_after} s")) && message.contains("Z (in "),
            "{message}"
        );
    }
    assert_eq!(queue.sent().len(), 1, "refused runs were not queued");
    assert_eq!(llm.total_calls(), 0, "refused runs made no model call");

    // Another caller has a cap of its own.
    let (status, body) = call(&app, Some(&queue), RUN_JWT).await;
    assert_eq!(status, 200, "{body}");

    // Once the worker finishes the first run, the slot is free again: the refused keyed
    // request, sent again, starts its run.
    let event = support_sqs_event(&[serde_json::to_string(&queue.sent()[0]).unwrap()]);
    let result = sqs::handle_batch(&app, Some(&queue), event, None).await;
    assert!(result.batch_item_failures.is_empty());
    let (status, body) = call(&app, Some(&queue), &keyed).await;
    assert_eq!(status, 202, "{body}");
    assert_ne!(body["run_id"], first.as_str());
    let (status, again) = call(&app, Some(&queue), &keyed).await;
    assert_eq!(
        (status, &again["run_id"]),
        (200, &body["run_id"]),
        "{again}"
    );
    let (status, _) = call(&app, Some(&queue), RUN).await;
    assert_eq!(status, 429, "the keyed run holds the only slot");
}

#[tokio::test]
async fn wrong_methods_and_routes_say_what_to_use() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), false);
    let mut event: Value = serde_json::from_str(RUN).unwrap();
    event["requestContext"]["http"]["method"] = "GET".into();
    event["routeKey"] = "GET /workflow/run".into();
    event["requestContext"]["routeKey"] = "GET /workflow/run".into();
    let (status, body, headers) = call_with_headers(&app, None, &event.to_string()).await;
    assert_eq!(status, 405, "{body}");
    assert_eq!(headers["allow"], "POST");
    assert!(
        body["message"].as_str().unwrap().contains("use POST"),
        "{body}"
    );
    let (status, body) = call(&app, None, NOT_FOUND).await;
    assert_eq!(status, 404);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("GET /workflow/runs/{run_id}"),
        "{body}"
    );
}

/// An SQS event with one record per body.
fn support_sqs_event(bodies: &[String]) -> aws_lambda_events::event::sqs::SqsEvent {
    let records: Vec<Value> = bodies
        .iter()
        .enumerate()
        .map(|(i, b)| {
            serde_json::json!({
                "messageId": format!("m{i}"),
                "body": b,
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
            })
        })
        .collect();
    serde_json::from_value(serde_json::json!({ "Records": records })).unwrap()
}

/// `GET /workflow/runs?status=&limit=` (what a form with empty fields sends): an empty value
/// is not absent, and openapi.yaml allows neither an empty status nor an empty limit.
const RUNS_LIST_EMPTY: &str = include_str!("../events/apigw-runs-list-empty-params.json");

#[tokio::test]
async fn empty_query_values_are_refused_as_the_contract_says() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), false);
    let (status, body) = call(&app, None, RUNS_LIST_EMPTY).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["field"], "status", "{body}");
    let only_limit = RUNS_LIST_EMPTY
        .replace("\"status=&limit=\"", "\"limit=\"")
        .replace("\"status\": \"\",", "");
    let (status, body) = call(&app, None, &only_limit).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["field"], "limit", "{body}");
    assert_eq!(llm.total_calls(), 0);
}
