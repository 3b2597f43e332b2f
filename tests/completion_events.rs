//! Completion events are never lost: at least once per finished run, with its `run_id` for
//! consumers to dedupe on. The worker (the SQS handler) runs each run offline on the memory
//! store with a fake clock; an injected event sink stands for EventBridge, and an invocation
//! that dies mid-send is a task aborted while the sink holds its put. The sweeper's sweep then
//! re-queues the run once its parked lease lapses, and that delivery is what sends.
//!
//! Counted: the puts that reached the bus. A crash between the claim and the put still ends
//! with exactly one event; a crash between the put and its record ends with exactly two (the
//! one duplicate the contract allows); duplicate messages and later sweeps add none.

use async_trait::async_trait;
use aws_lambda_events::event::sqs::SqsEvent;
use bounded_rag::clock::{Clock, FakeClock};
use bounded_rag::config::Settings;
use bounded_rag::entry::{sqs, App};
use bounded_rag::events::{EventSink, SinkError};
use bounded_rag::llm::OfflineModel;
use bounded_rag::rag::{RagGraph, RagLimits};
use bounded_rag::runs::{sweep, CompletionEvents, MemoryQueue, Runs, WorkMessage};
use bounded_rag::store::{CheckpointStore, MemoryStore};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// Where the first put dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Crash {
    /// Before the event reaches the bus.
    BeforePut,
    /// After the bus took the event, before the sender records it sent.
    AfterPut,
}

/// The bus: records every event it took; its first put hangs (so the invocation can be killed
/// there), after taking the event or not.
struct Bus {
    taken: Mutex<Vec<Value>>,
    crash: Crash,
    hung: AtomicBool,
    entered: Notify,
}

impl Bus {
    fn new(crash: Crash) -> Arc<Self> {
        Arc::new(Self {
            taken: Mutex::new(Vec::new()),
            crash,
            hung: AtomicBool::new(false),
            entered: Notify::new(),
        })
    }

    fn taken(&self) -> Vec<Value> {
        self.taken.lock().unwrap().clone()
    }
}

struct Sink(Arc<Bus>);

#[async_trait]
impl EventSink for Sink {
    async fn put(&self, detail: &Value) -> Result<(), SinkError> {
        let bus = &self.0;
        let first = !bus.hung.swap(true, Ordering::SeqCst);
        if first && bus.crash == Crash::AfterPut {
            bus.taken.lock().unwrap().push(detail.clone());
        }
        if first {
            bus.entered.notify_one();
            std::future::pending::<()>().await;
        }
        bus.taken.lock().unwrap().push(detail.clone());
        Ok(())
    }
}

struct World {
    runs: Arc<Runs>,
    store: Arc<MemoryStore>,
    clock: Arc<FakeClock>,
    queue: Arc<MemoryQueue>,
    bus: Arc<Bus>,
}

fn world(crash: Crash) -> World {
    let mut settings = Settings::default();
    settings.aws.work_queue_url = Some("https://sqs.local/queue".into());
    let kb = Arc::new(bounded_rag::ingest::sample_kb().unwrap());
    let graph = RagGraph::new(Arc::new(OfflineModel), kb, None, RagLimits::default());
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::at_ms(1_800_000_000_000));
    let app = App::from_parts(settings, graph, store.clone(), clock.clone());
    let bus = Bus::new(crash);
    let events = CompletionEvents::new(Box::new(Sink(bus.clone())));
    let runs = Arc::new(app.runs().clone().with_completion_events(events));
    World {
        runs,
        store,
        clock,
        queue: Arc::new(MemoryQueue::default()),
        bus,
    }
}

fn delivery(message: &WorkMessage) -> SqsEvent {
    let record = json!({
        "messageId": "m1",
        "body": serde_json::to_string(message).unwrap(),
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {},
        "eventSource": "aws:sqs",
    });
    serde_json::from_value(json!({ "Records": [record] })).unwrap()
}

impl World {
    /// Delivers `message` to a worker that dies while its first event put is held.
    async fn deliver_and_crash(&self, message: &WorkMessage) {
        let (runs, queue, event) = (self.runs.clone(), self.queue.clone(), delivery(message));
        let worker = tokio::spawn(async move {
            sqs::handle_batch(runs.as_ref(), Some(queue.as_ref()), event, None).await
        });
        tokio::time::timeout(Duration::from_secs(30), self.bus.entered.notified())
            .await
            .expect("the worker reached the event put");
        worker.abort();
        assert!(worker.await.unwrap_err().is_cancelled());
    }

    /// Delivers `message`; true when the record is done (not reported as a failure).
    async fn deliver(&self, message: &WorkMessage) -> bool {
        let event = delivery(message);
        let answer = sqs::handle_batch(self.runs.as_ref(), Some(self.queue.as_ref()), event, None);
        answer.await.batch_item_failures.is_empty()
    }

    /// Ten minutes later (every lease of the crashed invocation lapsed), one sweep; returns the
    /// messages it queued.
    async fn sweep_later(&self) -> Vec<WorkMessage> {
        self.clock.advance(Duration::from_secs(600));
        let before = self.queue.sent().len();
        let store: &MemoryStore = &self.store;
        sweep(store, self.queue.as_ref(), self.clock.now_ms())
            .await
            .unwrap();
        self.queue.sent()[before..].to_vec()
    }

    async fn lease_held(&self, run_id: &str) -> bool {
        let key = format!("run#{run_id}");
        let item = self.store.get(&key).await.unwrap().unwrap();
        item.lease.is_some()
    }
}

fn new_run(run_id: &str) -> WorkMessage {
    serde_json::from_value(json!({
        "run_id": run_id,
        "request": {"question": "What causes patch canker in durian?"}
    }))
    .unwrap()
}

/// Redelivers the sweep's messages, then duplicates of them, then sweeps again: nothing more
/// may be sent, and the run's lease is dropped.
async fn settle(w: &World, run_id: &str) {
    let requeued = w.sweep_later().await;
    assert_eq!(requeued, vec![WorkMessage::continuation(run_id)]);
    for _ in 0..3 {
        assert!(w.deliver(&requeued[0]).await);
    }
    assert!(w.deliver(&new_run(run_id)).await);
    assert_eq!(w.sweep_later().await, Vec::new());
    assert!(!w.lease_held(run_id).await);
}

#[tokio::test]
async fn a_crash_between_the_claim_and_the_put_still_sends_the_event_once() {
    let w = world(Crash::BeforePut);
    w.deliver_and_crash(&new_run("claimed")).await;
    assert!(w.bus.taken().is_empty());
    // Until the event is recorded sent, the finished run keeps its lease parked.
    assert!(w.lease_held("claimed").await);
    settle(&w, "claimed").await;
    let taken = w.bus.taken();
    assert_eq!(taken.len(), 1, "{taken:?}");
    assert_eq!(taken[0]["run_id"], "claimed");
    assert_eq!(taken[0]["status"], "completed");
}

#[tokio::test]
async fn a_crash_between_the_put_and_its_record_sends_it_again_with_the_same_run_id() {
    let w = world(Crash::AfterPut);
    w.deliver_and_crash(&new_run("put")).await;
    assert_eq!(w.bus.taken().len(), 1);
    assert!(w.lease_held("put").await);
    settle(&w, "put").await;
    let taken = w.bus.taken();
    assert_eq!(taken.len(), 2, "{taken:?}");
    assert_eq!(taken[0], taken[1]);
    assert_eq!(taken[1]["run_id"], "put");
}

#[tokio::test]
async fn without_a_crash_duplicates_and_sweeps_send_nothing_more() {
    let w = world(Crash::BeforePut);
    // The first put of this world hangs: spend it on another run first.
    w.deliver_and_crash(&new_run("other")).await;
    assert!(w.deliver(&new_run("plain")).await);
    assert!(!w.lease_held("plain").await);
    for _ in 0..3 {
        assert!(w.deliver(&new_run("plain")).await);
        assert!(w.deliver(&WorkMessage::continuation("plain")).await);
    }
    let plain = |w: &World| {
        w.bus
            .taken()
            .into_iter()
            .filter(|e| e["run_id"] == "plain")
            .count()
    };
    assert_eq!(plain(&w), 1);
    settle(&w, "other").await;
    assert_eq!(plain(&w), 1);
    assert_eq!(w.bus.taken().len(), 2);
}
