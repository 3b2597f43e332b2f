//! Threads through the `api` and `worker` Lambda binaries, black-box: `cargo lambda watch`'s
//! function URL emulation (the anonymous caller) against DynamoDB and SQS on moto, offline
//! model. A thread's first turn goes through the queue; while it is queued, a second turn is
//! `409 thread_busy` naming it (with `Retry-After`); once the worker has finished it, the
//! follow-up is turn 2, made to stand alone, and cites the patch-canker treatment passage;
//! the thread is then listed, read and deleted, after which nothing of it can be read. A
//! streamed follow-up (the `stream` function) starts with its `contextualize_question` step.
//!
//! Needs `scripts/setup-test-tools.sh` (moto_server and cargo-lambda in `.local/venv`).

use crate::support;

use serde_json::{json, Value};
use support::lambda_watch::{HttpResponse, LambdaWatch};
use support::moto::moto;

const SQS_NEW_RUN: &str = include_str!("../events/sqs-new-run.json");
const JSON: &[(&str, &str)] = &[("content-type", "application/json")];

async fn post(watch: &LambdaWatch, path: &str, body: &Value) -> HttpResponse {
    watch
        .url_request("api", "POST", path, Some(&body.to_string()), JSON)
        .await
}

#[tokio::test]
async fn a_conversation_through_the_queue_the_api_and_the_delete_route() {
    let moto = moto().await;
    let table = moto.create_table().await;
    let sqs = moto.sqs().await;
    let queue_url = moto.create_queue().await;
    let mut env = moto.function_env();
    env.extend([
        ("CHECKPOINT_TABLE", table.clone()),
        ("LLM_PROVIDER", "offline".to_owned()),
        ("WORK_QUEUE_URL", queue_url.clone()),
    ]);
    let watch = LambdaWatch::start(&env).await;

    // Turn 1, asynchronous: queued, not run yet.
    let first = json!({ "question": "What causes patch canker in durian?", "thread_id": "chat-1" });
    let started = post(&watch, "/workflow/runs", &first).await;
    assert_eq!(started.status, 202, "{started:?}");
    let first_run = started.json()["run_id"].as_str().unwrap().to_owned();

    // A second turn meanwhile: busy, naming the unfinished run.
    let follow_up = json!({ "question": "How is it treated?", "thread_id": "chat-1" });
    for path in ["/workflow/run", "/workflow/runs"] {
        let refused = post(&watch, path, &follow_up).await;
        assert_eq!(refused.status, 409, "{refused:?}");
        let body = refused.json();
        assert_eq!(body["error"], "thread_busy", "{body}");
        assert_eq!(body["run_id"], first_run.as_str(), "{body}");
        let retry: u64 = refused.header("retry-after").unwrap().parse().unwrap();
        assert!((1..=30).contains(&retry), "{retry}");
    }
    let deleting = watch
        .url_request("api", "DELETE", "/threads/chat-1", None, &[])
        .await;
    assert_eq!(deleting.status, 409, "{deleting:?}");

    // The worker runs turn 1 from its message (exactly one was queued: the refused requests
    // queued nothing).
    let received = sqs
        .receive_message()
        .queue_url(&queue_url)
        .max_number_of_messages(10)
        .wait_time_seconds(2)
        .send()
        .await
        .unwrap();
    let messages = received.messages();
    assert_eq!(messages.len(), 1, "{messages:?}");
    let message = &messages[0];
    let mut batch: Value = serde_json::from_str(SQS_NEW_RUN).unwrap();
    let record = &mut batch["Records"][0];
    record["messageId"] = json!(message.message_id().unwrap());
    record["receiptHandle"] = json!(message.receipt_handle().unwrap());
    record["body"] = json!(message.body().unwrap());
    record["md5OfBody"] = json!(message.md5_of_body().unwrap());
    let outcome = watch.invoke("worker", &batch).await;
    assert_eq!(outcome, json!({"batchItemFailures": []}), "{outcome:#}");

    // Turn 2, synchronous: stands alone, cites the treatment passage.
    let answered = post(&watch, "/workflow/run", &follow_up).await;
    assert_eq!(answered.status, 200, "{answered:?}");
    let second = answered.json();
    assert_eq!(second["metadata"]["thread_id"], "chat-1");
    assert_eq!(second["metadata"]["turn"], 2);
    let standalone = second["metadata"]["standalone_question"].as_str().unwrap();
    assert!(
        standalone.contains("patch canker in durian"),
        "{standalone}"
    );
    assert_eq!(
        second["workflow_steps"][0]["name"],
        "contextualize_question"
    );
    // The follow-up's search finds the Management section first; the answer cites what it
    // quotes.
    assert_eq!(
        support::happy_path::first_retrieved(&second),
        "kb://patch-canker.md#4",
        "{second:#}"
    );
    assert!(!second["citations"].as_array().unwrap().is_empty());
    let second_run = second["run_id"].as_str().unwrap().to_owned();

    let listed = watch.url_request("api", "GET", "/threads", None, &[]).await;
    assert_eq!(listed.status, 200, "{listed:?}");
    let threads = listed.json()["threads"].clone();
    assert_eq!(threads[0]["thread_id"], "chat-1", "{threads}");
    assert_eq!(threads[0]["turns"], 2, "{threads}");
    let shown = watch
        .url_request("api", "GET", "/threads/chat-1", None, &[])
        .await;
    let turns = shown.json()["turns"].clone();
    assert_eq!(turns[0]["run_id"], first_run.as_str(), "{turns}");
    assert_eq!(turns[0]["status"], "completed", "{turns}");
    assert_eq!(turns[1]["run_id"], second_run.as_str(), "{turns}");

    let deleted = watch
        .url_request("api", "DELETE", "/threads/chat-1", None, &[])
        .await;
    assert_eq!(deleted.status, 204, "{deleted:?}");
    assert_eq!(deleted.body, "");
    let gone = watch
        .url_request("api", "GET", "/threads/chat-1", None, &[])
        .await;
    assert_eq!(gone.status, 404, "{gone:?}");
    for run in [&first_run, &second_run] {
        let path = format!("/workflow/runs/{run}");
        let read = watch.url_request("api", "GET", &path, None, &[]).await;
        assert_eq!(read.status, 404, "{read:?}");
    }
}

/// The `final` event's JSON of a streamed run, and the names of its `step` events in order.
async fn streamed(watch: &LambdaWatch, body: &Value) -> (Value, Vec<String>) {
    let response = watch
        .url_stream("stream", "/workflow/run", &body.to_string(), JSON)
        .await;
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    let mut steps = Vec::new();
    let mut last = Value::Null;
    for event in text.split("\n\n").filter(|e| !e.trim().is_empty()) {
        let name = event
            .lines()
            .find_map(|l| l.strip_prefix("event: "))
            .unwrap_or("");
        let data = event
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap_or("null");
        match name {
            "step" => steps.push(
                serde_json::from_str::<Value>(data).unwrap()["name"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            ),
            "final" => last = serde_json::from_str(data).unwrap(),
            _ => {}
        }
    }
    (last, steps)
}

#[tokio::test]
async fn a_streamed_follow_up_starts_with_its_contextualize_step() {
    let moto = moto().await;
    let table = moto.create_table().await;
    let mut env = moto.function_env();
    env.extend([
        ("CHECKPOINT_TABLE", table),
        ("LLM_PROVIDER", "offline".to_owned()),
    ]);
    let watch = LambdaWatch::start(&env).await;
    let first = json!({ "question": "What causes patch canker in durian?", "thread_id": "s-1" });
    let (answer, steps) = streamed(&watch, &first).await;
    assert_eq!(answer["metadata"]["turn"], 1, "{answer}");
    // Speculation is on by default: a first turn starts by retrieving.
    assert_eq!(steps[0], "kg_retrieval");
    let follow_up = json!({ "question": "How is it treated?", "thread_id": "s-1" });
    let (answer, steps) = streamed(&watch, &follow_up).await;
    assert_eq!(answer["metadata"]["turn"], 2, "{answer}");
    assert_eq!(steps[0], "contextualize_question");
    // Then the turn starts as any run does, over the standalone question.
    assert_eq!(steps[1], "kg_retrieval");
    assert_eq!(
        steps
            .iter()
            .filter(|s| *s == "contextualize_question")
            .count(),
        1
    );
    assert_eq!(
        support::happy_path::first_retrieved(&answer),
        "kb://patch-canker.md#4",
        "{answer:#}"
    );
    assert!(!answer["citations"].as_array().unwrap().is_empty());
}
