//! Recording a finished turn: when a thread's run ends, the workflow writes its turn item,
//! then the head (the window of recent turns, the active turn cleared). A failure is only
//! logged: the next turn's start finds the ended run still active and records it then.

use super::error::ThreadError;
use super::head::{ActiveTurn, TurnRecord};
use super::heads::{encode, Heads, ATTEMPTS};
use crate::clock::Clock;
use crate::engine::Phase;
use crate::rag::ThreadContext;
use crate::rag::{Outcome, RagCheckpoint, RunResponse};
use crate::store::{CheckpointStore, StoreError, ThreadKey};

/// Records the turn of `cp` in its thread when its run has ended (the workflow calls this
/// after every invocation of a thread's run). Failures are logged, not raised: the next turn
/// records an ended run it finds still active.
pub(crate) async fn record_finished(
    store: &dyn CheckpointStore,
    clock: &dyn Clock,
    cp: &RagCheckpoint,
) {
    let Some(thread) = &cp.state.thread else {
        return;
    };
    if !ended(cp) {
        return;
    }
    if let Err(e) = record(store, clock, cp, thread).await {
        tracing::warn!(run_id = cp.run_id, error = %e, "could not record the thread's turn; the next turn will");
    }
}

async fn record(
    store: &dyn CheckpointStore,
    clock: &dyn Clock,
    cp: &RagCheckpoint,
    thread: &ThreadContext,
) -> Result<(), ThreadError> {
    let owner = cp.state.caller.digest();
    let key = ThreadKey {
        owner: &owner,
        thread_id: &thread.thread_id,
    };
    let heads = Heads::new(store);
    for _ in 0..ATTEMPTS {
        let now_ms = clock.now_ms();
        let Some((version, mut head)) = heads.read(key).await? else {
            return Ok(()); // deleted meanwhile
        };
        let Some(active) = head.active.clone().filter(|a| a.run_id == cp.run_id) else {
            return Ok(()); // already recorded
        };
        let record = turn_record(cp, &active, now_ms);
        let expires = now_ms + thread.ttl_secs * 1_000;
        heads
            .threads()?
            .put_turn(key, record.turn, &encode(&record)?, expires)
            .await?;
        head.append(record, thread.keep_turns, now_ms);
        match heads.write(key, version, &head, thread.ttl_secs).await {
            Ok(_) => return Ok(()),
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// True when the run will not be advanced again.
pub(super) fn ended(cp: &RagCheckpoint) -> bool {
    match cp.phase {
        // A waiting run's turn is answered once it is.
        Phase::Running | Phase::Waiting => false,
        Phase::Finished | Phase::Failed => true,
        Phase::Stopped => cp.state.outcome != Some(Outcome::Suspended),
    }
}

/// The record of the turn `active`, answered by the run of `cp` (which may lack the thread's
/// context: a run created from its queue message by a worker).
pub(super) fn turn_record(cp: &RagCheckpoint, active: &ActiveTurn, now_ms: u64) -> TurnRecord {
    let response = RunResponse::from_checkpoint(cp, "");
    TurnRecord {
        turn: active.turn,
        run_id: cp.run_id.clone(),
        status: response.status,
        question: response.question,
        standalone_question: cp.state.request.question.clone(),
        answer: response.answer,
        citations: response.citations,
        started_at_ms: active.started_at_ms,
        finished_at_ms: now_ms,
    }
}
