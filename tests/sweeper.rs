//! The sweeper on moto's DynamoDB and SQS: lapsed leases found through the sparse lease
//! index, exactly one message per lapsed lease however many sweepers race, and crashed runs
//! (cut off mid-step, or suspended with their continuation never queued) finished through
//! the real queue with at most the in-flight step run again.

use crate::support;

use async_trait::async_trait;
use bounded_rag::clock::{Clock, SystemClock};
use bounded_rag::entry::adapters::SqsQueue;
use bounded_rag::entry::sqs;
use bounded_rag::entry::sweeper::Sweeper;
use bounded_rag::rag::{RunRequest, RunStatus};
use bounded_rag::runs::SweepReport;
use bounded_rag::runs::{QueueError, WorkMessage, WorkQueue};
use bounded_rag::store::{CheckpointStore, DynamoStore, Lease};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use support::app::timed_app_on;
use support::happy_path::{schedule, QUESTION, STEPS};
use support::llm_server::{Script, ScriptedLlm};
use support::moto::{drain, moto, sqs_event};
use support::tap::Tap;

/// A fresh table and queue on moto.
async fn stack() -> (String, String) {
    let m = moto().await;
    (m.create_table().await, m.create_queue().await)
}

async fn store(table: &str) -> DynamoStore {
    let client = moto().await.dynamodb().await;
    DynamoStore::new(client, table.to_owned(), Duration::from_secs(3600))
}

async fn queue(url: &str) -> SqsQueue {
    SqsQueue::new(moto().await.sqs().await, url)
}

/// A sweeper with its own clients (as a second Lambda instance would have).
async fn sweeper(table: &str, url: &str, clock: Arc<dyn Clock>) -> Sweeper {
    Sweeper::new(
        Arc::new(store(table).await),
        Arc::new(queue(url).await),
        clock,
    )
}

/// The run ids of the messages on `url` (drained), each a continuation `{"run_id"}`.
async fn continuations(url: &str) -> Vec<String> {
    let messages = drain(&moto().await.sqs().await, url).await;
    messages
        .iter()
        .map(|m| {
            let message: WorkMessage =
                serde_json::from_str(m.body().expect("body")).expect("a work message");
            assert_eq!(message.request, None, "a continuation carries no request");
            message.run_id
        })
        .collect()
}

fn lease(owner: &str, expires_at_ms: u64) -> Lease {
    Lease {
        owner: owner.to_owned(),
        expires_at_ms,
    }
}

#[tokio::test]
async fn two_sweepers_racing_queue_exactly_one_message_per_lapsed_run() {
    let (table, url) = stack().await;
    let runs = store(&table).await;
    let now = SystemClock.now_ms();
    let mut lapsed = BTreeSet::new();
    for i in 0..12u64 {
        let run_id = format!("lapsed-{i}");
        let held = lease(&format!("crashed-{i}"), now - 1_000 - i);
        runs.put(&format!("run#{run_id}"), 0, b"{}", Some(&held))
            .await
            .unwrap();
        lapsed.insert(run_id);
    }
    for i in 0..3u64 {
        let live = lease(&format!("alive-{i}"), now + 60_000);
        runs.put(&format!("run#live-{i}"), 0, b"{}", Some(&live))
            .await
            .unwrap();
        // Leased once, then released by a final write: out of the index.
        let key = format!("run#done-{i}");
        let held = lease(&format!("finished-{i}"), now - 5_000);
        runs.put(&key, 0, b"{}", Some(&held)).await.unwrap();
        runs.put(&key, 1, b"{}", None).await.unwrap();
    }

    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let a = sweeper(&table, &url, clock.clone()).await;
    let b = sweeper(&table, &url, clock.clone()).await;
    let event = schedule();
    let (ra, rb) = tokio::join!(a.handle(&event), b.handle(&event));
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert_eq!(ra.requeued + rb.requeued, 12, "{ra:?} {rb:?}");
    assert_eq!(ra.failed + rb.failed, 0, "{ra:?} {rb:?}");
    assert_eq!(ra.lapsed, ra.requeued + ra.skipped, "{ra:?}");
    assert_eq!(rb.lapsed, rb.requeued + rb.skipped, "{rb:?}");

    let sent = continuations(&url).await;
    assert_eq!(sent.len(), 12, "{sent:?}");
    assert_eq!(sent.into_iter().collect::<BTreeSet<_>>(), lapsed);

    // The next minute: every lapsed lease is already re-queued, nothing is sent again.
    assert_eq!(a.handle(&event).await.unwrap(), SweepReport::default());
    assert_eq!(continuations(&url).await.len(), 0);
}

#[tokio::test]
async fn a_run_cut_off_mid_step_is_requeued_and_resumed_running_that_step_again() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let (table, url) = stack().await;
    // Puts: 1 creates the run, 2..=4 follow route_question, kg_retrieval, grade_documents;
    // put 5 (after generate) never lands, as if the worker died before its checkpoint.
    let tap = Arc::new(Tap::new(store(&table).await).dies_on(5));
    let (app, clock) = timed_app_on(
        &llm,
        Duration::from_millis(1),
        Duration::from_secs(60),
        tap.clone(),
    );
    let work = queue(&url).await;
    let sqs_client = moto().await.sqs().await;
    work.send(&WorkMessage {
        run_id: "cut".into(),
        request: Some(RunRequest::new(QUESTION)),
    })
    .await
    .unwrap();
    let first = drain(&sqs_client, &url).await;
    let batch = sqs::handle_batch(&app, Some(&work), sqs_event(&first), None).await;
    assert_eq!(batch.batch_item_failures.len(), 1, "the dying invocation");
    let cut = app.workflow().status("cut").await.unwrap();
    assert_eq!(cut.status, RunStatus::Running);
    assert_eq!(cut.metadata.total_steps, 3);
    assert_eq!(
        llm.total_calls(),
        5,
        "route 1, grade_documents 3, generate 1"
    );

    // The lease still binds: nothing to sweep. (The message the dying invocation left in
    // flight would only come back after the visibility timeout; it is gone here.)
    let sweeper = Sweeper::new(
        Arc::new(store(&table).await),
        Arc::new(queue(&url).await),
        clock.clone(),
    );
    assert_eq!(
        sweeper.handle(&schedule()).await.unwrap(),
        SweepReport::default()
    );
    clock.advance(Duration::from_secs(61));
    let report = sweeper.handle(&schedule()).await.unwrap();
    assert_eq!((report.lapsed, report.requeued), (1, 1), "{report:?}");

    let requeued = drain(&sqs_client, &url).await;
    assert_eq!(requeued.len(), 1);
    let batch = sqs::handle_batch(&app, Some(&work), sqs_event(&requeued), None).await;
    assert!(batch.batch_item_failures.is_empty(), "{batch:?}");

    let done = app.workflow().status("cut").await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.metadata.total_steps, 6);
    let names: Vec<&str> = done
        .workflow_steps
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names, STEPS);
    assert_eq!(llm.total_calls(), 7 + 1, "only generate ran twice");
    assert_eq!(llm.calls("generate_answer"), 2);
    assert_eq!(
        done.metadata.model_calls, 7,
        "the lost step's call is not counted"
    );
    // Finished: the lease is released and the run left the index.
    clock.advance(Duration::from_secs(3_600));
    assert_eq!(
        sweeper.handle(&schedule()).await.unwrap(),
        SweepReport::default()
    );
    assert!(drain(&sqs_client, &url).await.is_empty());
}

/// A queue that accepts nothing, as if the invocation died before its send.
struct Unreachable;

#[async_trait]
impl WorkQueue for Unreachable {
    async fn send(&self, _: &WorkMessage) -> Result<(), QueueError> {
        Err(QueueError::Transient("the invocation died first".into()))
    }
}

#[tokio::test]
async fn a_suspended_run_whose_continuation_was_never_queued_is_requeued_after_its_parked_lease() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let (table, url) = stack().await;
    let (app, clock) = timed_app_on(
        &llm,
        Duration::from_millis(200),
        Duration::from_millis(700),
        Arc::new(store(&table).await),
    );
    let new_run = WorkMessage {
        run_id: "parked".into(),
        request: Some(RunRequest::new(QUESTION)),
    };
    let work = queue(&url).await;
    work.send(&new_run).await.unwrap();
    let sqs_client = moto().await.sqs().await;
    let first = drain(&sqs_client, &url).await;
    let batch = sqs::handle_batch(&app, Some(&Unreachable), sqs_event(&first), None).await;
    assert_eq!(batch.batch_item_failures.len(), 1);
    let suspended = app.workflow().status("parked").await.unwrap();
    assert_eq!(suspended.status, RunStatus::Suspended);
    let calls_before = llm.total_calls();

    let sweeper = Sweeper::new(
        Arc::new(store(&table).await),
        Arc::new(queue(&url).await),
        clock.clone(),
    );
    assert_eq!(sweeper.handle(&schedule()).await.unwrap().lapsed, 0);
    clock.advance(Duration::from_secs(2));
    let report = sweeper.handle(&schedule()).await.unwrap();
    assert_eq!((report.lapsed, report.requeued), (1, 1), "{report:?}");
    assert_eq!(llm.total_calls(), calls_before, "sweeping calls no model");

    let mut invocations = 0;
    loop {
        let messages = drain(&sqs_client, &url).await;
        if messages.is_empty() {
            break;
        }
        invocations += 1;
        assert!(invocations <= 10, "bounded continuations");
        let batch = sqs::handle_batch(&app, Some(&work), sqs_event(&messages), None).await;
        assert!(batch.batch_item_failures.is_empty(), "{batch:?}");
    }
    let done = app.workflow().status("parked").await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.metadata.total_steps, 6);
    assert_eq!(llm.total_calls(), 7, "no step ran twice");
}

#[tokio::test]
async fn an_async_run_whose_message_was_never_sent_is_queued_once_its_queued_lease_lapses() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let (table, url) = stack().await;
    let (app, clock) = timed_app_on(
        &llm,
        Duration::from_millis(1),
        Duration::from_secs(60),
        Arc::new(store(&table).await),
    );
    // The API stored the run, then could not queue it (it answered 5xx).
    app.workflow()
        .submit("unsent", RunRequest::new(QUESTION))
        .await
        .unwrap();
    let sweeper = Sweeper::new(
        Arc::new(store(&table).await),
        Arc::new(queue(&url).await),
        clock.clone(),
    );
    // A message may sit in a busy queue for minutes: no duplicate for that.
    clock.advance(Duration::from_secs(10 * 60));
    assert_eq!(sweeper.handle(&schedule()).await.unwrap().lapsed, 0);
    clock.advance(bounded_rag::runs::QUEUED_LEASE);
    let report = sweeper.handle(&schedule()).await.unwrap();
    assert_eq!((report.lapsed, report.requeued), (1, 1), "{report:?}");

    let messages = drain(&moto().await.sqs().await, &url).await;
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].body(), Some(r#"{"run_id":"unsent"}"#));
    let work = queue(&url).await;
    let batch = sqs::handle_batch(&app, Some(&work), sqs_event(&messages), None).await;
    assert!(batch.batch_item_failures.is_empty(), "{batch:?}");
    let done = app.workflow().status("unsent").await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(llm.total_calls(), 7);
}

#[tokio::test]
async fn a_parked_lease_lets_the_next_invocation_in_at_once_and_its_own_lease_binds_again() {
    use bounded_rag::engine::{EngineError, Session};
    use bounded_rag::rag::RagCheckpoint;
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let store = Arc::new(bounded_rag::store::MemoryStore::new());
    let (app, clock) = timed_app_on(
        &llm,
        Duration::from_millis(200),
        Duration::from_millis(700),
        store.clone(),
    );
    let suspended = app
        .workflow()
        .run_new("handed-on", RunRequest::new(QUESTION), &app.budget(None))
        .await
        .unwrap();
    assert_eq!(suspended.status, RunStatus::Suspended);
    let stored = store.get("run#handed-on").await.unwrap().unwrap();
    let parked = stored
        .lease
        .expect("a suspended run keeps its lease, parked");
    assert!(parked.is_parked() && parked.is_live(clock.now_ms()));

    // A continuation takes the run at once (no Busy) ...
    let loaded = Session::load::<RagCheckpoint>(store.as_ref(), "handed-on")
        .await
        .unwrap()
        .unwrap();
    let held = Lease {
        owner: "continuation".into(),
        expires_at_ms: clock.now_ms() + 60_000,
    };
    let _session = Session::lock(store.as_ref(), "handed-on", &loaded, held, clock.now_ms())
        .await
        .expect("a parked lease does not bind");
    // ... and while its first step runs (the stored checkpoint still says suspended), a
    // duplicate message finds the run busy.
    let calls = llm.total_calls();
    let duplicate = app
        .workflow()
        .resume("handed-on", &app.budget(None))
        .await
        .unwrap_err();
    assert!(matches!(duplicate, EngineError::Busy { .. }), "{duplicate}");
    assert_eq!(llm.total_calls(), calls, "the duplicate called no model");
}
