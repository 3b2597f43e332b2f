//! Completion events: one `Run Finished` event per run that reaches a final status
//! (`completed`, `best_effort`, `failed`, `cancelled`), put into an [`EventSink`] (the
//! EventBridge bus named by `EVENT_BUS_NAME`: `entry/adapters/event_bus.rs`; unset: none is
//! sent; the seam is [`crate::events`]). The detail holds the run id, the thread id (`null` for a run outside any thread), the
//! status, `limits_hit`, tokens, model calls, steps, the duration, a hash of the caller and
//! the run and step a fork was forked from (`null` otherwise), never the question or the answer.
//!
//! **At least once; consumers dedupe on `run_id`.** A finished run keeps its lease *parked*
//! (`Workflow::with_completion_events`) until its event is *recorded* sent, so whatever dies
//! when, the event is sent by someone:
//! 1. the sender claims the send (a conditional write of `finished#<run id>`: `sending`, until
//!    a time that outlives one put), so two live deliveries of one run never both put;
//! 2. it puts the event;
//! 3. it records `sent` (or `failed` when the put failed, so the next attempt claims it at
//!    once), and only then drops the run's parked lease.
//!
//! An invocation that dies anywhere before step 3 leaves the lease to lapse; the sweeper then
//! re-queues the run, and that delivery finds the claim lapsed (or `failed`) and sends. A
//! duplicate message or a later sweep finds `sent` and sends nothing. So a duplicate is put
//! only when an invocation dies between its put and the record of it (or that record fails).

use crate::clock::{Clock, SystemClock};
use crate::engine::{EngineError, Session};
use crate::events::{EventSink, SinkError};
use crate::rag::{RagCheckpoint, RunResponse};
use crate::store::{CheckpointStore, StoreError, StoreKey};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Why a completion event could not be sent (it will be tried again).
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotifyError {
    /// The claim or the run could not be read or written.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The put failed.
    #[error(transparent)]
    Sink(#[from] SinkError),
}

/// What [`CompletionEvents::notify`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notified {
    /// This call sent the event.
    Sent,
    /// It was recorded sent before: nothing sent.
    AlreadySent,
    /// Another invocation claimed the send a moment ago and is putting it: nothing sent. The
    /// run's lease stays parked until the event is recorded sent, so if that invocation dies,
    /// the run's next delivery (or the sweep) sends it once the claim lapses.
    InFlight,
    /// The run has not ended (or does not exist): nothing to send yet.
    NotFinished,
}

/// The record item's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Record {
    /// Claimed until `until_ms` (epoch ms): being sent. Past it, the sender is presumed dead
    /// and anyone may claim it again.
    Sending {
        /// When the claim lapses (epoch ms).
        until_ms: u64,
    },
    /// Sent.
    Sent,
    /// The put failed: anyone may claim it again.
    Failed,
}

/// Claim attempts lost to a concurrent claimer before leaving it to that claimer.
const ATTEMPTS: usize = 3;

/// How long a claim lasts when [`CompletionEvents::timed`] was not told: longer than a put.
const CLAIM_TTL: Duration = Duration::from_secs(10);

/// Sends each finished run's event, at least once.
pub struct CompletionEvents {
    sink: Box<dyn EventSink>,
    /// Where `Run Waiting` events go (none: not sent).
    waiting: Option<Box<dyn EventSink>>,
    clock: Arc<dyn Clock>,
    /// How long a claim to send lasts: longer than one put (a bounded AWS call).
    claim_ttl: Duration,
}

impl CompletionEvents {
    /// Events put into `sink`.
    pub fn new(sink: Box<dyn EventSink>) -> Self {
        Self {
            sink,
            waiting: None,
            clock: Arc::new(SystemClock),
            claim_ttl: CLAIM_TTL,
        }
    }

    /// The same events, with a `Run Waiting` event into `sink` each time a run starts to
    /// wait for a person.
    pub fn with_waiting(self, sink: Box<dyn EventSink>) -> Self {
        Self {
            waiting: Some(sink),
            ..self
        }
    }

    /// Puts the `Run Waiting` event of `response` (a run that now waits): its run and thread,
    /// what kind of answer it waits for, the gated step, until when, and a hash of the caller;
    /// never the question (an integration reads the run for it, as its caller). Once, when
    /// the run starts to wait: a failed put is the caller's to log, not retried (the run stays
    /// listed as `waiting`, `GET /workflow/runs?status=waiting`).
    pub(crate) async fn waiting(
        &self,
        cp: &RagCheckpoint,
        response: &RunResponse,
    ) -> Result<(), SinkError> {
        let (Some(sink), Some(waiting)) = (&self.waiting, &response.interrupt) else {
            return Ok(());
        };
        let step = match &waiting.interrupt {
            crate::rag::Interrupt::Approve { step, .. } => Some(step.as_str()),
            crate::rag::Interrupt::Clarify { .. } => None,
        };
        let detail = json!({
            "run_id": response.run_id,
            "thread_id": response.metadata.thread_id,
            "status": response.status.as_str(),
            "interrupt": waiting.interrupt.kind(),
            "step": step,
            "expires_at": waiting.expires_at,
            "steps": response.metadata.total_steps,
            "caller_hash": cp.state.caller.digest(),
        });
        sink.put(&detail).await
    }

    /// The same events, whose claims are timed by `clock` and last `claim_ttl` (the runs set
    /// their own clock, and the time of two bounded AWS calls).
    pub(crate) fn timed(self, clock: Arc<dyn Clock>, claim_ttl: Duration) -> Self {
        Self {
            clock,
            claim_ttl,
            ..self
        }
    }

    /// Sends the event of `run_id` if it ended and it is not recorded sent (nor being sent)
    /// yet; once it is recorded sent, the run's parked lease is dropped.
    pub(crate) async fn notify(
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
            let now_ms = self.clock.now_ms();
            let current = store.get(&key).await.map_err(EngineError::Store)?;
            let version = current.as_ref().map_or(0, |c| c.version);
            // An unreadable record (an older format) is claimed again: at least once.
            match current.and_then(|c| serde_json::from_slice::<Record>(&c.body).ok()) {
                Some(Record::Sent) => {
                    release_hold(store, run_id, &run).await;
                    return Ok(Notified::AlreadySent);
                }
                Some(Record::Sending { until_ms }) if until_ms > now_ms => {
                    return Ok(Notified::InFlight)
                }
                _ => {}
            }
            let until_ms = now_ms.saturating_add(millis(self.claim_ttl));
            match store
                .put(&key, version, &body(Record::Sending { until_ms }), None)
                .await
            {
                Ok(v) => {
                    claimed = Some(v);
                    break;
                }
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(EngineError::Store(e).into()),
            }
        }
        let Some(version) = claimed else {
            return Ok(Notified::InFlight);
        };
        let detail = detail(&run.checkpoint, &response);
        match self.sink.put(&detail).await {
            Ok(()) => {
                match store.put(&key, version, &body(Record::Sent), None).await {
                    Ok(_) => release_hold(store, run_id, &run).await,
                    // The lease stays parked: once the claim lapses, the run's next delivery
                    // or the sweep sends the event again (consumers dedupe on run_id).
                    Err(e) => tracing::warn!(run_id, error = %e, "event sent; could not record it"),
                }
                tracing::info!(
                    run_id,
                    status = response.status.as_str(),
                    "completion event sent"
                );
                Ok(Notified::Sent)
            }
            Err(e) => {
                if let Err(e) = store.put(&key, version, &body(Record::Failed), None).await {
                    tracing::warn!(run_id, error = %e, "could not release the event claim");
                }
                tracing::warn!(run_id, error = %e, "completion event not sent; it will be retried");
                Err(e.into())
            }
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn body(record: Record) -> Vec<u8> {
    serde_json::to_vec(&record).unwrap_or_default()
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
        "forked_from": m.forked_from,
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
    use async_trait::async_trait;
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
