//! The answers of the handlers when the model, the store or the queue fails — a failed run
//! (permanent 502, transient 503) and how `GET` shows it, a store whose reads or writes fail, a
//! corrupt checkpoint, a queue that refuses, a run held by another invocation — for the
//! contract test in `openapi.rs` (which checks each against `openapi.yaml` and that every
//! documented status occurred).

use crate::support;

use async_trait::async_trait;
use bounded_rag::runs::{MemoryQueue, QueueError, WorkMessage, WorkQueue};
use bounded_rag::store::{
    CheckpointStore, Lease, ListPage, ListedStatus, MemoryStore, StoreError, Versioned,
};
use serde_json::json;
use std::sync::{Arc, Mutex};
use support::api_event::{
    cancel_event, get_event, list_event, steps_event, with_body, with_header,
};
use support::app::app;
use support::llm_server::{Reply, Script, ScriptedLlm};
use support::openapi::{call, json_of, Exchange};

const RUN: &str = include_str!("../events/apigw-run.json");
const RUNS_START: &str = include_str!("../events/apigw-runs-start.json");

/// What [`Faulty`] breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    /// Every read fails, retryable.
    GetTransient,
    /// Every write fails for good.
    PutPermanent,
    /// Every write of an existing run loses to "another writer".
    LoseRunWrites,
}

/// A memory store that fails on demand.
struct Faulty {
    inner: MemoryStore,
    fault: Mutex<Fault>,
}

impl Faulty {
    fn set(&self, fault: Fault) {
        *self.fault.lock().unwrap() = fault;
    }
    fn fault(&self) -> Fault {
        *self.fault.lock().unwrap()
    }
}

#[async_trait]
impl CheckpointStore for Faulty {
    async fn get(&self, key: &str) -> Result<Option<Versioned>, StoreError> {
        match self.fault() {
            Fault::GetTransient => Err(StoreError::Transient("injected timeout".into())),
            _ => self.inner.get(key).await,
        }
    }
    async fn put(
        &self,
        key: &str,
        expected: u64,
        body: &[u8],
        lease: Option<&Lease>,
    ) -> Result<u64, StoreError> {
        match self.fault() {
            Fault::PutPermanent => Err(StoreError::Permanent("injected: access denied".into())),
            Fault::LoseRunWrites if key.starts_with("run#") && expected > 0 => {
                Err(StoreError::Conflict {
                    key: key.to_owned(),
                    expected,
                })
            }
            _ => self.inner.put(key, expected, body, lease).await,
        }
    }
    async fn list_owned(
        &self,
        owner: &str,
        status: Option<ListedStatus>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ListPage, StoreError> {
        match self.fault() {
            Fault::GetTransient => Err(StoreError::Transient("injected timeout".into())),
            _ => self.inner.list_owned(owner, status, limit, cursor).await,
        }
    }
    fn name(&self) -> &'static str {
        "faulty"
    }
}

/// A queue that refuses every message.
struct RefusingQueue(bool);

#[async_trait]
impl WorkQueue for RefusingQueue {
    async fn send(&self, _: &WorkMessage) -> Result<(), QueueError> {
        Err(if self.0 {
            QueueError::Transient("injected: throttled".into())
        } else {
            QueueError::Permanent("injected: queue does not exist".into())
        })
    }
}

/// The answers of failed runs and of a failing store or queue, on scripted models of their own
/// (a task of its own: the contract test's future is deep already).
pub(crate) async fn fault_answers() -> Vec<Exchange> {
    let mut answers = Vec::new();
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let queue = MemoryQueue::default();

    // Failed runs: permanent (502), transient (503), and how GET shows them.
    let refusing =
        ScriptedLlm::start(Script::defaults().on("route_query", [Reply::status(400)])).await;
    let failing = app(&refusing, Arc::new(MemoryStore::new()), false);
    let failed = call(&failing, None, RUN).await;
    let failed_id = json_of(&failed)["run_id"].as_str().unwrap().to_owned();
    answers.push(failed);
    answers.push(call(&failing, None, &get_event(&failed_id)).await);
    let down = ScriptedLlm::start(Script::defaults().on("route_query", [Reply::status(500)])).await;
    answers.push(call(&app(&down, Arc::new(MemoryStore::new()), false), None, RUN).await);

    // Store and queue faults.
    let faulty = Arc::new(Faulty {
        inner: MemoryStore::new(),
        fault: Mutex::new(Fault::None),
    });
    let shaky = app(&llm, faulty.clone(), true);
    let stored = call(&shaky, None, RUN).await;
    let stored_id = json_of(&stored)["run_id"].as_str().unwrap().to_owned();
    faulty.set(Fault::GetTransient);
    answers.push(call(&shaky, None, &get_event(&stored_id)).await);
    answers.push(call(&shaky, None, &cancel_event(&stored_id)).await);
    answers.push(call(&shaky, None, &steps_event(&stored_id, &[])).await);
    answers.push(call(&shaky, None, &list_event(&[])).await);
    faulty.set(Fault::PutPermanent);
    answers.push(call(&shaky, None, RUN).await);
    answers.push(call(&shaky, Some(&queue), RUNS_START).await);
    faulty.set(Fault::LoseRunWrites);
    answers.push(call(&shaky, None, RUN).await);
    faulty.set(Fault::None);
    let corrupt = "00000000-0000-4000-8000-0000000000cc";
    faulty
        .put(&format!("run#{corrupt}"), 0, b"{not a checkpoint", None)
        .await
        .unwrap();
    answers.push(call(&shaky, None, &get_event(corrupt)).await);
    answers.push(call(&shaky, None, &cancel_event(corrupt)).await);
    answers.push(call(&shaky, None, &steps_event(corrupt, &[])).await);
    answers.push(call(&shaky, Some(&RefusingQueue(true)), RUNS_START).await);
    answers.push(call(&shaky, Some(&RefusingQueue(false)), RUNS_START).await);

    // A repeat while another invocation holds the run: 202 running.
    let same_body = with_body(
        RUNS_START,
        r#"{"question":"What causes patch canker in durian?"}"#,
    );
    let held = with_header(&same_body, "idempotency-key", "held");
    let queued = call(&shaky, Some(&queue), &held).await;
    let held_id = json_of(&queued)["run_id"].as_str().unwrap().to_owned();
    let key = format!("run#{held_id}");
    let item = faulty.get(&key).await.unwrap().unwrap();
    let lease = Lease {
        owner: "another-invocation".into(),
        expires_at_ms: u64::MAX / 2,
    };
    faulty
        .put(&key, item.version, &item.body, Some(&lease))
        .await
        .unwrap();
    let repeat = call(&shaky, None, &with_header(RUN, "idempotency-key", "held")).await;
    assert_eq!(
        (repeat.status, json_of(&repeat)["status"].clone()),
        (202, json!("running"))
    );
    answers.push(repeat);
    answers
}
