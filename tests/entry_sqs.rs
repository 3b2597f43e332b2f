//! The SQS worker: concurrent batches, partial batch failures, poison messages, duplicate
//! deliveries and racing workers.

use crate::support;

use aws_lambda_events::event::sqs::SqsEvent;
use bounded_rag::entry::sqs;
use bounded_rag::rag::RunStatus;
use bounded_rag::runs::MemoryQueue;
use bounded_rag::store::MemoryStore;
use serde_json::{json, Value};
use std::sync::Arc;
use support::app::app;
use support::llm_server::{Script, ScriptedLlm};

const NEW_RUN: &str = include_str!("../events/sqs-new-run.json");
const CONTINUE: &str = include_str!("../events/sqs-continue.json");
const MIXED: &str = include_str!("../events/sqs-batch-mixed.json");

fn event(json: &str) -> SqsEvent {
    serde_json::from_str(json).expect("event parses")
}

fn records(bodies: &[(&str, Value)]) -> SqsEvent {
    let records: Vec<Value> = bodies
        .iter()
        .map(|(id, body)| {
            json!({
                "messageId": id,
                "body": body.as_str().map(str::to_owned).unwrap_or_else(|| body.to_string()),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
            })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).unwrap()
}

fn failures(r: &aws_lambda_events::event::sqs::SqsBatchResponse) -> Vec<String> {
    let mut ids: Vec<String> = r
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn the_sample_events_are_processed() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), true);
    let queue = MemoryQueue::default();
    let result = sqs::handle_batch(&app, Some(&queue), event(NEW_RUN), None).await;
    assert!(result.batch_item_failures.is_empty());
    let new: SqsEvent = event(NEW_RUN);
    let body: Value = serde_json::from_str(new.records[0].body.as_deref().unwrap()).unwrap();
    let run_id = body["run_id"].as_str().unwrap();
    assert_eq!(
        app.workflow().status(run_id).await.unwrap().status,
        RunStatus::Completed
    );

    // the sample continuation names a run this store never saw: poison, reported as failure
    let result = sqs::handle_batch(&app, Some(&queue), event(CONTINUE), None).await;
    assert_eq!(result.batch_item_failures.len(), 1);

    // the mixed sample: its third record is unreadable
    let result = sqs::handle_batch(&app, Some(&queue), event(MIXED), None).await;
    let mixed = event(MIXED);
    let poison = mixed.records[2].message_id.clone().unwrap();
    assert!(failures(&result).contains(&poison));
}

#[tokio::test]
async fn a_poison_message_ends_failed_and_the_rest_of_its_batch_succeeds() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), true);
    let queue = MemoryQueue::default();
    let batch = records(&[
        (
            "ok-1",
            json!({"run_id": "run-ok-1", "request": {"question": "What causes patch canker in durian?"}}),
        ),
        (
            "poison",
            json!({"run_id": "run-poison", "request": {"question": "q", "n_web_searches": 99}}),
        ),
        (
            "ok-2",
            json!({"run_id": "run-ok-2", "request": {"question": "How is durian fruit borer managed?"}}),
        ),
        ("garbage", Value::String("{not json".into())),
    ]);
    let result = sqs::handle_batch(&app, Some(&queue), batch, None).await;
    assert_eq!(failures(&result), ["garbage", "poison"]);
    let wf = app.workflow();
    assert_eq!(
        wf.status("run-ok-1").await.unwrap().status,
        RunStatus::Completed
    );
    assert_eq!(
        wf.status("run-ok-2").await.unwrap().status,
        RunStatus::Completed
    );
    let failed = wf.status("run-poison").await.unwrap();
    assert_eq!(failed.status, RunStatus::Failed);
    let reason = failed.error.unwrap().message;
    assert!(reason.contains("n_web_searches"), "{reason}");
    assert_eq!(
        llm.total_calls(),
        14,
        "two runs of 7 calls; none for the poison"
    );

    // redelivered until the redrive policy moves it to the DLQ: no work is redone
    let again = records(&[(
        "poison",
        json!({"run_id": "run-poison", "request": {"question": "q", "n_web_searches": 99}}),
    )]);
    let result = sqs::handle_batch(&app, Some(&queue), again, None).await;
    assert_eq!(failures(&result), ["poison"]);
    assert_eq!(llm.total_calls(), 14);
}

#[tokio::test]
async fn a_duplicate_delivery_never_advances_a_run_twice() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), true);
    let queue = MemoryQueue::default();
    let message =
        json!({"run_id": "dup", "request": {"question": "What causes patch canker in durian?"}});
    for _ in 0..2 {
        let result =
            sqs::handle_batch(&app, Some(&queue), records(&[("m", message.clone())]), None).await;
        assert!(result.batch_item_failures.is_empty());
    }
    assert_eq!(llm.total_calls(), 7);
    assert_eq!(
        app.workflow()
            .status("dup")
            .await
            .unwrap()
            .metadata
            .total_steps,
        6
    );
}

#[tokio::test]
async fn two_workers_racing_on_one_run_exactly_one_advances_it() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), true);
    let queue = MemoryQueue::default();
    app.workflow()
        .submit(
            "raced",
            bounded_rag::rag::RunRequest::new("What causes patch canker in durian?"),
        )
        .await
        .unwrap();
    let continuation = || records(&[("m", json!({"run_id": "raced"}))]);
    let (a, b) = tokio::join!(
        sqs::handle_batch(&app, Some(&queue), continuation(), None),
        sqs::handle_batch(&app, Some(&queue), continuation(), None),
    );
    // one finished the run; the other found it leased and asked for redelivery
    let retried = a.batch_item_failures.len() + b.batch_item_failures.len();
    assert_eq!(retried, 1);
    assert_eq!(llm.total_calls(), 7);
    // the redelivery finds the run finished and does nothing
    let result = sqs::handle_batch(&app, Some(&queue), continuation(), None).await;
    assert!(result.batch_item_failures.is_empty());
    assert_eq!(llm.total_calls(), 7);
}

#[tokio::test]
async fn a_batch_is_processed_concurrently() {
    // Each model call takes 100 ms: ten runs of seven calls would take 7 s one after another.
    // Concurrency shows in the order of arrival: a second run's first call arrives before the
    // first run's last call.
    let slow = |r: support::llm_server::Reply| [r.delayed(std::time::Duration::from_millis(100))];
    use support::llm_server::Reply;
    let script = Script::new()
        .on("route_query", slow(Reply::route("kg_retrieval")))
        .on("grade_documents", slow(Reply::yes()))
        .on(
            "generate_answer",
            slow(Reply::answer("Phytophthora palmivora [1].")),
        )
        .on("grade_hallucinations", slow(Reply::yes()))
        .on("grade_answer", slow(Reply::yes()));
    let llm = ScriptedLlm::start(script).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), true);
    let queue = MemoryQueue::default();
    let bodies: Vec<(String, Value)> = (0..10)
        .map(|i| (format!("m{i}"), json!({"run_id": format!("batch-{i}"), "request": {"question": "What causes patch canker in durian?"}})))
        .collect();
    let refs: Vec<(&str, Value)> = bodies
        .iter()
        .map(|(id, b)| (id.as_str(), b.clone()))
        .collect();
    let result = sqs::handle_batch(&app, Some(&queue), records(&refs), None).await;
    assert!(result.batch_item_failures.is_empty());
    assert_eq!(llm.total_calls(), 70);
    let sequence = llm.sequence();
    let routes_first = sequence
        .iter()
        .take(10)
        .filter(|n| *n == "route_query")
        .count();
    assert_eq!(
        routes_first, 10,
        "all ten runs started before any went further: {sequence:?}"
    );
}
