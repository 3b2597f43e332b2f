//! Completion events: one EventBridge event per run that reaches a final status (`completed`,
//! `best_effort`, `failed`, `cancelled`), source `bounded-rag`, detail-type `Run Finished`, on
//! the bus named by `EVENT_BUS_NAME` (unset: none is sent). The detail holds the run id, the
//! thread id (`null` for a run outside any thread), the status, `limits_hit`, tokens, model
//! calls, steps, the duration and a hash of the caller, never the question or the answer.
//!
//! **Exactly once.** The send is claimed first by a conditional write of the item
//! `finished#<run id>` (`sending`), and only the claimer sends; it then records `sent`, or
//! `failed` when the put failed, so a later attempt claims it again. While its event is
//! unsent, a finished run keeps its lease *parked* (`Workflow::with_completion_events`), so:
//! - a duplicate message, or the redelivery of one whose put failed, reaches a finished run,
//!   whose worker tries the send again (or finds it `sent` and does nothing);
//! - an invocation that dies after the run's last checkpoint write and before the send leaves
//!   the lease to lapse; the sweeper then re-queues the run, and that delivery sends it;
//! - once sent, the lease is dropped, so the sweeper no longer sees the run.
//!
//! Two attempts can never both send: the claim is a conditional write. The one window left is
//! an invocation dying between its claim and the put: that event is never sent (at most once
//! there, never twice).

use crate::engine::{EngineError, Session};
use crate::error::{Classify, ErrorClass};
use crate::rag::{RagCheckpoint, RunResponse};
use crate::store::{CheckpointStore, StoreError, StoreKey};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// A failed put of an event, classified once.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// Throttling, timeouts, 5xx: a later attempt may succeed.
    #[error("event bus temporarily unavailable: {0}")]
    Transient(String),
    /// Refused (no such bus, access denied).
    #[error("event bus refused the event: {0}")]
    Permanent(String),
}

impl Classify for SinkError {
    fn class(&self) -> ErrorClass {
        match self {
            SinkError::Transient(_) => ErrorClass::Transient,
            SinkError::Permanent(_) => ErrorClass::Permanent,
        }
    }
}

/// Where `Run Finished` events go.
#[async_trait]
pub trait EventSink: Send + Sync {
    /// Puts one event with `detail` (a JSON object).
    async fn put(&self, detail: &Value) -> Result<(), SinkError>;
}

/// Why a completion event could not be sent (it will be tried again).
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// The claim or the run could not be read or written.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The put failed.
    #[error(transparent)]
    Sink(#[from] SinkError),
}

/// What [`CompletionEvents::notify`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notified {
    /// This call sent the event.
    Sent,
    /// It was sent (or claimed) before: nothing sent.
    AlreadySent,
    /// The run has not ended (or does not exist): nothing to send yet.
    NotFinished,
}

/// The claim item's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Claim {
    /// Claimed: being sent (or its sender died).
    Sending,
    /// Sent.
    Sent,
    /// The put failed: anyone may claim it again.
    Failed,
}

/// Claims attempts lost to a concurrent claimer before giving up (that claimer sends).
const ATTEMPTS: usize = 3;

/// Sends each finished run's event once.
pub struct CompletionEvents {
    sink: Box<dyn EventSink>,
}

impl CompletionEvents {
    /// Events put into `sink`.
    pub fn new(sink: Box<dyn EventSink>) -> Self {
        Self { sink }
    }

    /// Sends the event of `run_id` if it ended and nobody sent (or is sending) it yet.
    pub async fn notify(
        &self,
        store: &dyn CheckpointStore,
        run_id: &str,
    ) -> Result<Notified, NotifyError> {
        let Some(run) = Session::load::<RagCheckpoint>(store, run_id).await? else {
            return Ok(Notified::NotFinished);
        };
        let response = RunResponse::from_checkpoint(&run.checkpoint, "");
        if !response.status.is_final() {
            return Ok(Notified::NotFinished);
        }
        let key = StoreKey::Finished(run_id).to_string();
        let mut claimed = None;
        for _ in 0..ATTEMPTS {
            let current = store.get(&key).await.map_err(EngineError::Store)?;
            let version = current.as_ref().map_or(0, |c| c.version);
            let state = current.and_then(|c| serde_json::from_slice::<Claim>(&c.body).ok());
            if matches!(state, Some(Claim::Sending | Claim::Sent)) {
                release_hold(store, run_id, &run).await;
                return Ok(Notified::AlreadySent);
            }
            match store.put(&key, version, &body(Claim::Sending), None).await {
                Ok(v) => {
                    claimed = Some(v);
                    break;
                }
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(EngineError::Store(e).into()),
            }
        }
        let Some(version) = claimed else {
            return Ok(Notified::AlreadySent);
        };
        let detail = detail(&run.checkpoint, &response);
        match self.sink.put(&detail).await {
            Ok(()) => {
                if let Err(e) = store.put(&key, version, &body(Claim::Sent), None).await {
                    // The claim alone keeps it from being sent again.
                    tracing::warn!(run_id, error = %e, "event sent; could not record it");
                }
                release_hold(store, run_id, &run).await;
                tracing::info!(
                    run_id,
                    status = response.status.as_str(),
                    "completion event sent"
                );
                Ok(Notified::Sent)
            }
            Err(e) => {
                if let Err(e) = store.put(&key, version, &body(Claim::Failed), None).await {
                    tracing::warn!(run_id, error = %e, "could not release the event claim");
                }
                tracing::warn!(run_id, error = %e, "completion event not sent; it will be retried");
                Err(e.into())
            }
        }
    }
}

fn body(claim: Claim) -> Vec<u8> {
    serde_json::to_vec(&claim).unwrap_or_default()
}

/// The event's detail: never the question nor the answer.
fn detail(cp: &RagCheckpoint, response: &RunResponse) -> Value {
    let m = &response.metadata;
    json!({
        "run_id": response.run_id,
        "thread_id": m.thread_id,
        "status": response.status.as_str(),
        "limits_hit": m.limits_hit,
        "tokens": m.tokens,
        "model_calls": m.model_calls,
        "steps": m.total_steps,
        "duration_seconds": cp.total_processing_time(),
        "caller_hash": cp.state.caller.digest(),
    })
}

/// Drops the parked lease a finished run kept while its event was unsent (one conditional
/// write; if the run changed meanwhile, the next delivery or sweep does it).
async fn release_hold(
    store: &dyn CheckpointStore,
    run_id: &str,
    run: &crate::engine::Loaded<RagCheckpoint>,
) {
    if run.lease.is_none() {
        return;
    }
    let Ok(body) = serde_json::to_vec(&run.checkpoint) else {
        return;
    };
    let key = StoreKey::Run(run_id).to_string();
    if let Err(e) = store.put(&key, run.version, &body, None).await {
        tracing::debug!(run_id, error = %e, "finished run's lease left for the next delivery");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{run_key, Checkpoint, Phase};
    use crate::rag::{Caller, Outcome, RagNode, RagState, RunRequest};
    use crate::store::{Lease, MemoryStore};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    struct Recording {
        sent: Mutex<Vec<Value>>,
        fail_next: AtomicUsize,
    }

    #[async_trait]
    impl EventSink for Arc<Recording> {
        async fn put(&self, detail: &Value) -> Result<(), SinkError> {
            if self.fail_next.load(Ordering::SeqCst) > 0 {
                self.fail_next.fetch_sub(1, Ordering::SeqCst);
                return Err(SinkError::Transient("injected".into()));
            }
            self.sent.lock().unwrap().push(detail.clone());
            Ok(())
        }
    }

    async fn finished_run(store: &MemoryStore, outcome: Option<Outcome>, phase: Phase) {
        let mut cp: RagCheckpoint = Checkpoint::new(
            "r",
            RagNode::RouteQuestion,
            RagState::new(RunRequest::new("a secret question")),
        );
        cp.phase = phase;
        cp.state.outcome = outcome;
        cp.state.answer = Some("a secret answer".into());
        cp.state.caller = Caller::Jwt("me".into());
        let lease = Lease::parked(u64::MAX);
        let key = run_key("r");
        let version = store.get(&key).await.unwrap().map_or(0, |v| v.version);
        store
            .put(
                &key,
                version,
                &serde_json::to_vec(&cp).unwrap(),
                Some(&lease),
            )
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn one_event_per_finished_run_a_failed_put_is_retried_and_the_hold_dropped() {
        let store = MemoryStore::new();
        let sink = Arc::new(Recording::default());
        let events = CompletionEvents::new(Box::new(sink.clone()));
        finished_run(&store, None, Phase::Running).await;
        assert_eq!(
            events.notify(&store, "r").await.unwrap(),
            Notified::NotFinished
        );
        assert_eq!(
            events.notify(&store, "none").await.unwrap(),
            Notified::NotFinished
        );

        finished_run(&store, Some(Outcome::Completed), Phase::Finished).await;
        sink.fail_next.store(1, Ordering::SeqCst);
        assert!(events.notify(&store, "r").await.is_err());
        assert!(store
            .get(&run_key("r"))
            .await
            .unwrap()
            .unwrap()
            .lease
            .is_some());
        assert_eq!(events.notify(&store, "r").await.unwrap(), Notified::Sent);
        for _ in 0..3 {
            assert_eq!(
                events.notify(&store, "r").await.unwrap(),
                Notified::AlreadySent
            );
        }
        let sent = sink.sent.lock().unwrap().clone();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0]["status"], "completed");
        assert_eq!(sent[0]["thread_id"], Value::Null);
        assert_eq!(sent[0]["caller_hash"], Caller::Jwt("me".into()).digest());
        let text = sent[0].to_string();
        assert!(!text.contains("secret"), "{text}");
        assert_eq!(store.get(&run_key("r")).await.unwrap().unwrap().lease, None);
    }
}
