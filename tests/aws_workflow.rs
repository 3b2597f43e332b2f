//! The workflow on the real wire protocols of its AWS services, served by moto: checkpoints in
//! DynamoDB, continuations through SQS, racing invocations, idempotency.

use crate::support;

use crate::support::happy_path::QUESTION;
use aws_lambda_events::event::sqs::SqsEvent;
use bounded_rag::clock::{Clock, SystemClock};
use bounded_rag::engine::{Budget, EngineError};
use bounded_rag::entry::adapters::SqsQueue;
use bounded_rag::entry::{api, sqs};
use bounded_rag::rag::{RunRequest, RunStatus};
use bounded_rag::runs::WorkQueue;
use bounded_rag::store::DynamoStore;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use support::app::{app, timed_app_on};
use support::llm_server::{Script, ScriptedLlm};
use support::moto::{moto, unique_name};
use support::tap::Tap;

const RUN: &str = include_str!("../events/apigw-run.json");
const RUN_IDEMPOTENT: &str = include_str!("../events/apigw-run-idempotent.json");

async fn dynamo() -> (DynamoStore, aws_sdk_dynamodb::Client, String) {
    let m = moto().await;
    let table = m.create_table().await;
    let client = m.dynamodb().await;
    (
        DynamoStore::new(client.clone(), table.clone(), Duration::from_secs(3600)),
        client,
        table,
    )
}

async fn queue() -> (SqsQueue, aws_sdk_sqs::Client, String) {
    let m = moto().await;
    let client = aws_sdk_sqs::Client::new(&m.sdk_config().await);
    let url = client
        .create_queue()
        .queue_name(unique_name("work"))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    (SqsQueue::new(client.clone(), url.clone()), client, url)
}

/// Receives what is on the queue as a Lambda SQS event.
async fn receive(client: &aws_sdk_sqs::Client, url: &str) -> Option<SqsEvent> {
    let out = client
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .send()
        .await
        .unwrap();
    let messages = out.messages.unwrap_or_default();
    if messages.is_empty() {
        return None;
    }
    let records: Vec<Value> = messages
        .iter()
        .map(|m| {
            json!({
                "messageId": m.message_id.clone().unwrap(),
                "receiptHandle": m.receipt_handle.clone().unwrap(),
                "body": m.body.clone().unwrap(),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
            })
        })
        .collect();
    for m in &messages {
        client
            .delete_message()
            .queue_url(url)
            .receipt_handle(m.receipt_handle.clone().unwrap())
            .send()
            .await
            .unwrap();
    }
    Some(serde_json::from_value(json!({ "Records": records })).unwrap())
}

async fn call(
    app: &bounded_rag::entry::App,
    queue: Option<&dyn WorkQueue>,
    event: &str,
) -> (u16, Value) {
    let response = api::handle(app, queue, lambda_http::request::from_str(event).unwrap()).await;
    (response.status().as_u16(), api::body_json(&response))
}

#[tokio::test]
async fn http_run_leaves_its_checkpoint_in_dynamodb_with_one_write_per_step() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let (store, client, table) = dynamo().await;
    let counting = Arc::new(Tap::new(store));
    let app = app(&llm, counting.clone(), false);
    let (status, body) = call(&app, None, RUN).await;
    assert_eq!(status, 200, "{body}");
    let run_id = body["run_id"].as_str().unwrap();

    let item = client
        .get_item()
        .table_name(&table)
        .key(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S(format!("run#{run_id}")),
        )
        .key(
            "sk",
            aws_sdk_dynamodb::types::AttributeValue::S("head".into()),
        )
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .expect("checkpoint item in DynamoDB");
    assert!(item.contains_key("expires_at"));
    // 6 steps: one create (holding the lease) + one write per step, the last releasing it
    assert_eq!(counting.puts(), 1 + 6);
    let largest = counting.bodies().into_iter().max().unwrap();
    assert!(
        largest < 8 * 1024,
        "a typical checkpoint is under 8 KB, got {largest}"
    );
    let stored = app.workflow().status(run_id).await.unwrap();
    assert_eq!(stored.status, RunStatus::Completed);
}

#[tokio::test]
async fn budget_stop_continues_via_sqs_to_the_same_answer_with_no_step_rerun() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let (store, _, _) = dynamo().await;
    let (app, _clock) = timed_app_on(
        &llm,
        Duration::from_millis(200),
        Duration::from_millis(700),
        Arc::new(store),
    );
    let (sqs_queue, client, url) = queue().await;
    let (status, body) = call(&app, Some(&sqs_queue), RUN).await;
    assert_eq!(status, 202, "{body}");
    let run_id = body["run_id"].as_str().unwrap().to_owned();
    let suspended = app.workflow().status(&run_id).await.unwrap();
    assert_eq!(suspended.status, RunStatus::Suspended);
    let counters_before = suspended.metadata.total_steps;

    let mut invocations = 0;
    while let Some(event) = receive(&client, &url).await {
        invocations += 1;
        assert!(invocations < 20);
        let result = sqs::handle_batch(&app, Some(&sqs_queue), event, None).await;
        assert!(result.batch_item_failures.is_empty());
    }
    assert!(invocations >= 1);
    let done = app.workflow().status(&run_id).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.answer, "Scripted answer [1].");
    assert_eq!(done.metadata.total_steps, 6);
    assert!(done.metadata.total_steps > counters_before);
    assert_eq!(llm.total_calls(), 7, "no completed step re-run");
}

#[tokio::test]
async fn two_workers_racing_on_one_run_in_dynamodb_exactly_one_advances_it() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let (store, _, _) = dynamo().await;
    let store = Arc::new(store);
    let app = app(&llm, store, true);
    let wf = app.workflow();
    wf.submit("raced", RunRequest::new(QUESTION)).await.unwrap();
    let budget = Budget::new(50, SystemClock.now_ms() + 60_000);
    let (a, b) = tokio::join!(wf.resume("raced", &budget), wf.resume("raced", &budget));
    let oks = [&a, &b].iter().filter(|r| r.is_ok()).count();
    assert_eq!(oks, 1, "{a:?} {b:?}");
    let err = a.err().or(b.err()).expect("one invocation was refused");
    assert!(
        matches!(err, EngineError::Busy { .. } | EngineError::Lost { .. }),
        "{err}"
    );
    assert_eq!(llm.total_calls(), 7);
}

#[tokio::test]
async fn the_same_idempotency_key_twice_gives_one_run_in_dynamodb() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let (store, _, _) = dynamo().await;
    let app = app(&llm, Arc::new(store), false);
    let (_, first) = call(&app, None, RUN_IDEMPOTENT).await;
    let (_, second) = call(&app, None, RUN_IDEMPOTENT).await;
    assert_eq!(first["run_id"], second["run_id"]);
    assert_eq!(first["status"], "completed");
    assert_eq!(llm.total_calls(), 7, "the model is called once per step");
}
