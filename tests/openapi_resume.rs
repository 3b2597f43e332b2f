//! The answers of `POST /workflow/runs/{run_id}/resume` (and a retried, keyed fork), one per
//! documented status, for the contract test in `openapi.rs` (which checks each against
//! `openapi.yaml` and that every documented status occurred). A waiting run's own answer is
//! among them, so its `interrupt` is checked too.

use crate::support;

use bounded_rag::clock::SystemClock;
use bounded_rag::config::{Gated, Interrupts};
use bounded_rag::runs::MemoryQueue;
use bounded_rag::search::{TavilyClient, TavilyConfig};
use bounded_rag::store::{CheckpointStore, MemoryStore};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use support::app::{app_with, timed_app_with};
use support::llm_server::{Reply, Script, ScriptedLlm};
use support::openapi::{call, Exchange};
use support::web_server::{ScriptedWeb, WebReply, WebResult};

const RUN: &str = include_str!("../events/apigw-run.json");

fn post(path: &str, body: &str, key: Option<&str>) -> String {
    let mut v: Value = serde_json::from_str(RUN).unwrap();
    v["rawPath"] = path.into();
    v["requestContext"]["http"]["path"] = path.into();
    if let Some(key) = key {
        v["headers"]["idempotency-key"] = key.into();
    }
    v["headers"]["content-length"] = body.len().to_string().into();
    v["body"] = body.into();
    v.to_string()
}

fn ask(question: &str) -> String {
    post(
        "/workflow/run",
        &json!({ "question": question }).to_string(),
        None,
    )
}

fn resume(run_id: &str, body: &str, key: Option<&str>) -> String {
    post(&format!("/workflow/runs/{run_id}/resume"), body, key)
}

/// `POST /workflow/runs/{run_id}/resume` with the JSON `body`, by the IAM caller.
pub(crate) fn resume_event(run_id: &str, body: &str) -> String {
    resume(run_id, body, None)
}

/// An app over `llm` whose runs ask back when their question's subject is not named.
pub(crate) fn asking_app(llm: &ScriptedLlm) -> bounded_rag::entry::App {
    app_with(
        llm,
        Arc::new(MemoryStore::new()),
        Arc::new(SystemClock),
        |g| g.with_interrupts(clarify()),
    )
}

fn run_id_of(x: &Exchange) -> String {
    let body: Value = serde_json::from_slice(&x.body).unwrap();
    body["run_id"].as_str().unwrap().to_owned()
}

fn clarify() -> Interrupts {
    Interrupts {
        clarify: true,
        approve: vec![Gated::WebSearch],
        timeout: Duration::from_secs(600),
    }
}

/// An app whose questions go to a web search that waits for approval, with the scripted
/// model and search servers it runs on (kept alive by the caller).
pub(crate) async fn approving_app() -> (bounded_rag::entry::App, ScriptedLlm, ScriptedWeb) {
    let llm =
        ScriptedLlm::start(Script::defaults().on("route_query", [Reply::route("web_search")]))
            .await;
    let web = ScriptedWeb::start([WebReply::results([WebResult::new(
        "Durian prices",
        "https://example.org/prices",
        "Durian sells for about 20 dollars a kilogram this season.",
        0.9,
    )])])
    .await;
    let search = Arc::new(
        TavilyClient::new(TavilyConfig {
            base_url: web.base_url(),
            api_key: None,
        })
        .unwrap(),
    );
    let app = app_with(
        &llm,
        Arc::new(MemoryStore::new()),
        Arc::new(SystemClock),
        |g| g.with_web_search(search).with_interrupts(clarify()),
    );
    (app, llm, web)
}

/// One answer of the resume route per documented status, on a scripted model of its own.
pub(crate) async fn resume_answers() -> Vec<Exchange> {
    let llm = &ScriptedLlm::start(Script::defaults()).await;
    let store = Arc::new(MemoryStore::new());
    let main = app_with(llm, store.clone(), Arc::new(SystemClock), |g| {
        g.with_interrupts(clarify())
    });
    let mut answers = Vec::new();

    // A waiting run (200, `interrupt`), answered (200), repeated with its key (200), refused
    // once it no longer waits (409) and for the key with another body (422).
    let waiting = call(&main, None, &ask("How do I treat it?")).await;
    assert_eq!(waiting.status, 200, "{waiting:?}");
    let run_id = run_id_of(&waiting);
    answers.push(waiting);
    let answer = r#"{"answer": "durian patch canker"}"#;
    // 400: the other kind of answer, and a body that is neither.
    answers.push(call(&main, None, &resume(&run_id, r#"{"approve": true}"#, None)).await);
    answers.push(call(&main, None, &resume(&run_id, "{}", None)).await);
    let done = call(&main, None, &resume(&run_id, answer, Some("r-1"))).await;
    assert_eq!(done.status, 200, "{done:?}");
    answers.push(done);
    answers.push(call(&main, None, &resume(&run_id, answer, Some("r-1"))).await);
    let reused = call(
        &main,
        None,
        &resume(&run_id, r#"{"answer": "x"}"#, Some("r-1")),
    )
    .await;
    assert_eq!(reused.status, 422, "{reused:?}");
    answers.push(reused);
    let not_waiting = call(&main, None, &resume(&run_id, answer, None)).await;
    assert_eq!(not_waiting.status, 409, "{not_waiting:?}");
    answers.push(not_waiting);
    // 404, 400 (a bad id), 413.
    let unknown = "00000000-0000-4000-8000-00000000dead";
    answers.push(call(&main, None, &resume(unknown, answer, None)).await);
    answers.push(call(&main, None, &resume("not.a.run", answer, None)).await);
    let big = json!({ "answer": "x".repeat(70_000) }).to_string();
    answers.push(call(&main, None, &resume(&run_id, &big, None)).await);
    // 500: a checkpoint that cannot be read.
    let corrupt = "00000000-0000-4000-8000-0000000000cc";
    store
        .put(&format!("run#{corrupt}"), 0, b"{not a checkpoint", None)
        .await
        .unwrap();
    answers.push(call(&main, None, &resume(corrupt, answer, None)).await);
    // 429: the request rate, counted before anything else.
    let limited = app_with(
        llm,
        Arc::new(MemoryStore::new()),
        Arc::new(SystemClock),
        |g| g.with_interrupts(clarify()),
    )
    .with_max_requests_per_caller_per_minute(Some(1));
    let first = call(&limited, None, &ask("How do I treat it?")).await;
    answers.push(call(&limited, None, &resume(&run_id_of(&first), answer, None)).await);

    // 202: an answered run that runs out of its budget, with a queue to continue it.
    let queue = MemoryQueue::default();
    let (timed, _clock) = timed_app_with(
        llm,
        Duration::from_millis(200),
        Duration::from_millis(700),
        Arc::new(MemoryStore::new()),
        |g| g.with_interrupts(clarify()),
    );
    let waiting = call(&timed, None, &ask("How do I treat it?")).await;
    let suspended = call(
        &timed,
        Some(&queue),
        &resume(&run_id_of(&waiting), answer, None),
    )
    .await;
    assert_eq!(suspended.status, 202, "{suspended:?}");
    answers.push(suspended);

    // A retried fork with its key: the first fork, as it stands; the key with another body: 422.
    let fork_path = format!("/workflow/runs/{run_id}/fork");
    let first = call(
        &main,
        None,
        &post(&fork_path, r#"{"from_step": 3}"#, Some("f-1")),
    )
    .await;
    assert_eq!(first.status, 200, "{first:?}");
    let again = call(
        &main,
        None,
        &post(&fork_path, r#"{"from_step": 3}"#, Some("f-1")),
    )
    .await;
    assert_eq!(run_id_of(&again), run_id_of(&first));
    answers.push(again);
    let reused = call(
        &main,
        None,
        &post(&fork_path, r#"{"from_step": 2}"#, Some("f-1")),
    )
    .await;
    assert_eq!(reused.status, 422, "{reused:?}");
    answers.push(reused);
    answers
}
