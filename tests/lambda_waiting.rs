//! A person in the loop through the local stack: the `api` binary under `cargo lambda watch`
//! against moto's DynamoDB and SQS, offline model, `CLARIFY` on (the default). A run that asks
//! back returns `waiting` at once: its invocation is over, its item holds only a parked lease
//! (the wait's timer, binding no one) and nothing is queued; answering it through the function
//! URL goes on from the checkpoint, the asking step not run again, and a retried answer with
//! the same `Idempotency-Key` changes nothing.

use crate::support;
use crate::support::run_body::step_names as names;

use bounded_rag::clock::{Clock, SystemClock};
use bounded_rag::store::{CheckpointStore, DynamoStore};
use serde_json::{json, Value};
use std::time::Duration;
use support::lambda_watch::LambdaWatch;
use support::moto::{drain, moto};

#[tokio::test]
async fn a_waiting_run_holds_no_invocation_and_resumes_through_the_function_url() {
    let moto = moto().await;
    let table = moto.create_table().await;
    let queue = moto.create_queue().await;
    let mut env = moto.function_env();
    env.extend([
        ("CHECKPOINT_TABLE", table.clone()),
        ("WORK_QUEUE_URL", queue.clone()),
        ("LLM_PROVIDER", "offline".to_owned()),
        ("INTERRUPT_TIMEOUT_SECONDS", "3600".to_owned()),
        ("RUST_LOG", "bounded_rag=info,warn".to_owned()),
    ]);
    let watch = LambdaWatch::start(&env).await;

    let ask = json!({"question": "How do I treat it?"}).to_string();
    let asked = watch
        .url_request("api", "POST", "/workflow/run", Some(&ask), &[])
        .await;
    assert_eq!(asked.status, 200, "{asked:?}");
    let waiting = asked.json();
    assert_eq!(waiting["status"], "waiting", "{waiting:#}");
    assert_eq!(waiting["interrupt"]["kind"], "clarify");
    assert_eq!(names(&waiting), ["clarify"]);
    let run_id = waiting["run_id"].as_str().unwrap().to_owned();

    // The invocation is over: the item's lease is parked (no invocation's), lapsing when the
    // wait runs out, and no continuation was queued.
    let store = DynamoStore::new(
        moto.dynamodb().await,
        table.clone(),
        Duration::from_secs(3600),
    );
    let item = store.get(&format!("run#{run_id}")).await.unwrap().unwrap();
    let lease = item.lease.expect("the wait's timer");
    assert!(lease.is_parked(), "{lease:?}");
    let now = SystemClock.now_ms();
    let until = lease.expires_at_ms;
    assert!(
        until > now + 3_500_000 && until <= now + 3_600_000,
        "lapses when the wait runs out: {until} vs {now}"
    );
    assert!(drain(&moto.sqs().await, &queue).await.is_empty());

    let path = format!("/workflow/runs/{run_id}/resume");
    let answer = json!({"answer": "durian patch canker"}).to_string();
    let key = [("idempotency-key", "answer-1")];
    let resumed = watch
        .url_request("api", "POST", &path, Some(&answer), &key)
        .await;
    assert_eq!(resumed.status, 200, "{resumed:?}");
    let done = resumed.json();
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(
        done["metadata"]["clarified_question"],
        "How do I treat durian patch canker?"
    );
    let steps = names(&done);
    assert_eq!(steps[0], "clarify");
    assert_eq!(
        steps.iter().filter(|s| **s == "clarify").count(),
        1,
        "{steps:?}"
    );
    let answer_text = done["answer"].as_str().unwrap();
    assert!(answer_text.contains("Phytophthora"), "{answer_text}");

    // The same request again: the run as it stands, nothing run twice.
    let again = watch
        .url_request("api", "POST", &path, Some(&answer), &key)
        .await;
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(again.json()["workflow_steps"], done["workflow_steps"]);
    let item = store.get(&format!("run#{run_id}")).await.unwrap().unwrap();
    let read: Value = serde_json::from_slice(&item.body).unwrap();
    assert_eq!(read["steps"], done["metadata"]["total_steps"]);
}
