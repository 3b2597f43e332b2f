//! Cancelling a run (`POST /workflow/runs/{run_id}/cancel`, CLI `cancel RUN_ID`).
//!
//! A cancel is one conditional write of the run's checkpoint: the run is marked finished with
//! the outcome [`Outcome::Cancelled`], its answer so far kept, its lease dropped. Nothing else
//! has to be told:
//!
//! - a queued or suspended run never resumes: the worker (or a sweep) that picks it up reads a
//!   finished run and advances nothing, and without a lease the sweeper no longer sees it;
//! - a running invocation learns of it at its next checkpoint write at the latest: the cancel
//!   changed the version that write is conditional on, so the write fails as a conflict, and
//!   [`settle`] re-reads the run, finds it cancelled, and returns its answer as the run's, with
//!   nothing logged as a failure. The engine starts no node after a failed write, so no model
//!   call starts after that write either; the calls of the step in flight end first (a step's
//!   calls start together, or one after another only as retries of a failed call).

use crate::engine::{run_key, EngineError, Phase, Session};
use crate::rag::{status_of, Caller, Outcome, RagCheckpoint, RunResponse, RunStatus};
use crate::store::{CheckpointStore, Lease, StoreError};

/// Cancel writes retried after losing a race with the run's own checkpoint writes: each loss
/// means the run advanced a step, so a handful always suffices.
const ATTEMPTS: usize = 8;

/// What a cancel did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cancel {
    /// The run was queued, suspended or running and is now `cancelled`.
    Cancelled(RunResponse),
    /// It was cancelled before: nothing changed (a repeated cancel is idempotent).
    AlreadyCancelled(RunResponse),
    /// It had already ended (`completed`, `best_effort` or `failed`): nothing changed.
    Finished(RunResponse),
}

/// Cancels `run_id` in `store`. With `caller`, another caller's run is
/// [`EngineError::NotFound`]; `respond` shapes a checkpoint into the caller's answer.
/// The cancelled run keeps `hold` as its lease (a parked one, while its completion event is
/// unsent), or none.
pub(crate) async fn cancel(
    store: &dyn CheckpointStore,
    caller: Option<&Caller>,
    run_id: &str,
    hold: Option<Lease>,
    respond: impl Fn(&RagCheckpoint) -> RunResponse,
) -> Result<Cancel, EngineError> {
    let not_found = || EngineError::NotFound {
        run_id: run_id.to_owned(),
    };
    for _ in 0..ATTEMPTS {
        let loaded = Session::load::<RagCheckpoint>(store, run_id)
            .await?
            .ok_or_else(not_found)?;
        let mut cp = loaded.checkpoint;
        if caller.is_some_and(|c| cp.state.caller != *c) {
            return Err(not_found());
        }
        match status_of(&cp) {
            RunStatus::Cancelled => return Ok(Cancel::AlreadyCancelled(respond(&cp))),
            status if status.is_final() => return Ok(Cancel::Finished(respond(&cp))),
            _ => {}
        }
        mark_cancelled(&mut cp);
        let body = serde_json::to_vec(&cp).map_err(|e| EngineError::Corrupt {
            run_id: run_id.to_owned(),
            message: e.to_string(),
        })?;
        match store
            .put(&run_key(run_id), loaded.version, &body, hold.as_ref())
            .await
        {
            Ok(_) => {
                tracing::info!(run_id, steps = cp.steps, "run cancelled");
                return Ok(Cancel::Cancelled(respond(&cp)));
            }
            // The run wrote a step meanwhile: read it again and cancel that.
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(EngineError::Store(e)),
        }
    }
    Err(EngineError::Store(StoreError::Transient(format!(
        "run {run_id} kept advancing during {ATTEMPTS} attempts to cancel it; try again"
    ))))
}

/// Ends `cp` as cancelled: finished (so no invocation can advance it), no next node, and its
/// best answer so far as the answer: the final one if the run had one, else the latest
/// generated (not yet checked) one, else none.
fn mark_cancelled(cp: &mut RagCheckpoint) {
    cp.phase = Phase::Finished;
    cp.next = None;
    cp.failure = None;
    cp.state.outcome = Some(Outcome::Cancelled);
    if cp.state.answer.is_none() {
        cp.state.answer = cp.state.generation.clone();
    }
}

/// What an invocation whose run write failed with `error` returns: when the run was
/// cancelled meanwhile (the cancel changed the version the write expected), the cancelled
/// run's answer, so the invocation stops cleanly; otherwise `error` itself.
pub(crate) async fn settle(
    store: &dyn CheckpointStore,
    run_id: &str,
    error: EngineError,
    respond: impl Fn(&RagCheckpoint) -> RunResponse,
) -> Result<RunResponse, EngineError> {
    if !matches!(error, EngineError::Lost { .. }) {
        return Err(error);
    }
    match Session::load::<RagCheckpoint>(store, run_id).await {
        Ok(Some(loaded)) if loaded.checkpoint.state.outcome == Some(Outcome::Cancelled) => {
            tracing::info!(run_id, "run was cancelled; this invocation stopped");
            Ok(respond(&loaded.checkpoint))
        }
        _ => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Checkpoint;
    use crate::rag::{RagNode, RagState, RunRequest};
    use crate::store::MemoryStore;

    fn respond(cp: &RagCheckpoint) -> RunResponse {
        RunResponse::from_checkpoint(cp, "test")
    }

    async fn stored(store: &MemoryStore, phase: Phase, outcome: Option<Outcome>) -> u64 {
        let mut cp: RagCheckpoint = Checkpoint::new(
            "r",
            RagNode::RouteQuestion,
            RagState::new(RunRequest::new("q")),
        );
        cp.phase = phase;
        cp.state.outcome = outcome;
        cp.state.answer = Some("so far".into());
        let lease = Lease::parked(u64::MAX);
        store
            .put(
                &run_key("r"),
                0,
                &serde_json::to_vec(&cp).unwrap(),
                Some(&lease),
            )
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_suspended_run_is_cancelled_once_keeping_its_answer_and_dropping_its_lease() {
        let store = MemoryStore::new();
        stored(&store, Phase::Stopped, Some(Outcome::Suspended)).await;
        let Cancel::Cancelled(r) = cancel(&store, None, "r", None, respond).await.unwrap() else {
            panic!("expected Cancelled");
        };
        assert_eq!(
            (r.status, r.answer.as_str()),
            (RunStatus::Cancelled, "so far")
        );
        let item = store.get(&run_key("r")).await.unwrap().unwrap();
        assert_eq!((item.version, item.lease), (2, None));
        let again = cancel(&store, None, "r", None, respond).await.unwrap();
        assert!(matches!(again, Cancel::AlreadyCancelled(_)));
        assert_eq!(store.get(&run_key("r")).await.unwrap().unwrap().version, 2);
    }

    #[test]
    fn statuses_have_their_wire_names() {
        for status in [
            RunStatus::Running,
            RunStatus::Completed,
            RunStatus::BestEffort,
            RunStatus::Suspended,
            RunStatus::Failed,
            RunStatus::Cancelled,
        ] {
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
    }

    #[tokio::test]
    async fn a_finished_run_is_left_alone_and_another_callers_run_is_not_found() {
        let store = MemoryStore::new();
        stored(&store, Phase::Finished, Some(Outcome::Completed)).await;
        let done = cancel(&store, None, "r", None, respond).await.unwrap();
        assert!(matches!(done, Cancel::Finished(ref r) if r.status == RunStatus::Completed));
        let other = Caller::Jwt("other".into());
        assert!(matches!(
            cancel(&store, Some(&other), "r", None, respond).await,
            Err(EngineError::NotFound { .. })
        ));
        assert!(matches!(
            cancel(&store, None, "missing", None, respond).await,
            Err(EngineError::NotFound { .. })
        ));
    }

    #[tokio::test]
    async fn a_lost_write_settles_as_the_cancelled_run_and_other_errors_pass_through() {
        let store = MemoryStore::new();
        stored(&store, Phase::Running, None).await;
        let lost = || EngineError::Lost { run_id: "r".into() };
        assert!(settle(&store, "r", lost(), respond).await.is_err());
        cancel(&store, None, "r", None, respond).await.unwrap();
        let r = settle(&store, "r", lost(), respond).await.unwrap();
        assert_eq!(r.status, RunStatus::Cancelled);
        let busy = EngineError::Busy {
            run_id: "r".into(),
            until_ms: 0,
        };
        assert!(matches!(
            settle(&store, "r", busy, respond).await,
            Err(EngineError::Busy { .. })
        ));
    }
}
