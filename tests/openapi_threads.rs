//! The answers of the thread routes — two turns of a thread, `GET /threads` (paged, bad cursors
//! and limits), one thread, a busy thread, the deletion path — for the contract test in
//! `openapi.rs` (which checks each against `openapi.yaml` and that every documented status
//! occurred).

use crate::support;

use bounded_rag::store::MemoryStore;
use serde_json::{json, Value};
use std::sync::Arc;
use support::api_event::{thread_event, with_body};
use support::app::app;
use support::llm_server::{Script, ScriptedLlm};
use support::openapi::{call, json_of, Exchange};

const RUN: &str = include_str!("../events/apigw-run.json");
const RUNS_GET: &str = include_str!("../events/apigw-runs-get.json");

/// The caller of `events/apigw-runs-get.json`.
fn iam_caller() -> bounded_rag::rag::Caller {
    let v: Value = serde_json::from_str(RUNS_GET).unwrap();
    let arn = v["requestContext"]["authorizer"]["iam"]["userArn"]
        .as_str()
        .unwrap();
    bounded_rag::rag::Caller::Iam(arn.to_owned())
}

/// The answers of the thread routes, on a scripted model of their own (a task of its own: the
/// contract test's future is deep already).
pub(crate) async fn thread_answers() -> Vec<Exchange> {
    let mut answers = Vec::new();
    let llm = ScriptedLlm::start(Script::defaults()).await;
    // Threads: two turns, the routes, a busy thread and the deletion path.
    let chat = app(&llm, Arc::new(MemoryStore::new()), false);
    let turn = |q: &str| {
        with_body(
            RUN,
            &json!({ "question": q, "thread_id": "chat" }).to_string(),
        )
    };
    answers.push(call(&chat, None, &turn("What causes patch canker in durian?")).await);
    answers.push(call(&chat, None, &turn("How is it treated?")).await);
    answers.push(call(&chat, None, &thread_event("GET", "/threads", &[])).await);
    for cursor in ["", "bm90LWEtY3Vyc29y"] {
        let page = call(
            &chat,
            None,
            &thread_event("GET", "/threads", &[("cursor", cursor)]),
        )
        .await;
        assert_eq!(page.status, 400, "{page:?}");
        answers.push(page);
    }
    let page = call(
        &chat,
        None,
        &thread_event("GET", "/threads", &[("limit", "0")]),
    )
    .await;
    assert_eq!(page.status, 400);
    answers.push(page);
    answers.push(
        call(
            &chat,
            None,
            &thread_event("GET", "/threads/chat", &[("limit", "1")]),
        )
        .await,
    );
    answers.push(call(&chat, None, &thread_event("GET", "/threads/no.such", &[])).await);
    answers.push(call(&chat, None, &thread_event("GET", "/threads/bad%20id", &[])).await);
    answers.push(
        call(
            &chat,
            None,
            &thread_event("DELETE", "/threads/no.such", &[]),
        )
        .await,
    );
    answers.push(
        call(
            &chat,
            None,
            &thread_event("DELETE", "/threads/bad%20id", &[]),
        )
        .await,
    );
    chat.runs()
        .threads()
        .begin(&iam_caller(), "held", "held-run", "q")
        .await
        .unwrap();
    let busy = with_body(
        RUN,
        r#"{"question":"How is it treated?","thread_id":"held"}"#,
    );
    let refused = call(&chat, None, &busy).await;
    assert_eq!(
        (refused.status, json_of(&refused)["error"].clone()),
        (409, json!("thread_busy"))
    );
    answers.push(refused);
    answers.push(call(&chat, None, &thread_event("DELETE", "/threads/held", &[])).await);
    let deleted = call(&chat, None, &thread_event("DELETE", "/threads/chat", &[])).await;
    assert_eq!(deleted.status, 204);
    answers.push(deleted);
    answers
}
