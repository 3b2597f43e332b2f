//! Runs that wait for a person (`POST /workflow/runs/{run_id}/resume`, `bounded-rag resume`):
//! a waiting run answered and advanced, a wait that ran out ended.
//!
//! A waiting run holds no invocation: its last write parked a lease that lapses when the
//! wait runs out (`INTERRUPT_TIMEOUT_SECONDS`), so the sweeper re-queues it then and the
//! worker ends it `best_effort` with `interrupt_timeout` ([`Workflow::end_wait`]). An answer
//! is one conditional write: the answered state goes into the store together with the
//! answering invocation's lease, before any step runs, so a crash after it loses nothing (the
//! lease lapses, the sweeper re-queues the run, a worker continues it) and a second answer
//! finds the run no longer waiting. The step that asked is not run again: the run goes on at
//! the node its wait named.

use super::thread::record_finished;
use super::workflow::Workflow;
use crate::engine::{end_wait, Budget, EngineError, Loaded, Phase, Session};
use crate::rag::answer_interrupt;
use crate::rag::KeyedAnswer;
use crate::rag::{status_of, RagCheckpoint, Reply, ReplyError, RunResponse};

/// What an answer to a run did.
#[derive(Debug)]
pub(crate) enum Answered {
    /// The run took the answer and was advanced: as it stands now.
    Ran(RunResponse),
    /// The run does not wait (any more): nothing changed.
    NotWaiting(RunResponse),
    /// The wait ran out before the answer came: the run is ended `best_effort` with
    /// `interrupt_timeout` (now, if the sweeper had not yet).
    TimedOut,
    /// The answer does not fit what the run asks.
    Reply(ReplyError),
    /// The run took an answer with this `Idempotency-Key` and body before: it is not taken
    /// again, and the run is as it stands.
    Repeat(RunResponse),
    /// The run took an answer with this `Idempotency-Key` and another body.
    KeyReused,
}

impl Workflow<'_> {
    /// Answers the waiting run `run_id` (of this workflow's caller) with `reply` and advances
    /// it within `budget`.
    pub(crate) async fn answer(
        &self,
        run_id: &str,
        reply: Reply,
        key: Option<KeyedAnswer>,
        budget: &Budget,
    ) -> Result<Answered, EngineError> {
        let loaded = self.load_own(run_id).await?;
        let cp = &loaded.checkpoint;
        if let Some(key) = &key {
            let before = cp
                .state
                .person
                .answered_with
                .iter()
                .find(|k| k.key == key.key);
            match before {
                Some(before) if before.body == key.body => {
                    return Ok(Answered::Repeat(self.respond(cp)))
                }
                Some(_) => return Ok(Answered::KeyReused),
                None => {}
            }
        }
        if cp.wait_expired(self.clock.now_ms()) {
            self.end_wait(run_id, loaded).await?;
            return Ok(Answered::TimedOut);
        }
        if cp.phase != Phase::Waiting {
            return Ok(Answered::NotWaiting(self.respond(cp)));
        }
        let mut answered = cp.clone();
        if let Err(e) = answer_interrupt(&mut answered.state, reply) {
            return Ok(Answered::Reply(e));
        }
        answered.state.person.answered_with.extend(key.clone());
        let next = answered
            .next
            .unwrap_or_else(|| self.graph.entry(&answered.state));
        answered.answer_wait(next);
        tracing::info!(run_id, resumes_at = next.as_str(), "waiting run answered");
        // The answer is in the write that takes the run: `advance_loaded` locks with this body.
        let loaded = loaded.replaced(run_id, answered)?;
        match self.advance_loaded(run_id, loaded, budget).await {
            Ok(response) => Ok(Answered::Ran(response)),
            // Another answer took the run first (or, with this key, this one's first try).
            Err(EngineError::Lost { .. } | EngineError::Busy { .. }) => {
                let now = self.load_own(run_id).await?;
                let cp = &now.checkpoint;
                let mine = key
                    .as_ref()
                    .is_some_and(|k| cp.state.person.answered_with.contains(k));
                Ok(if mine {
                    Answered::Repeat(self.respond(cp))
                } else {
                    Answered::NotWaiting(self.respond(cp))
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Ends the run of `loaded`, whose wait ran out: `best_effort` with `interrupt_timeout`
    /// and the best answer so far, in one conditional write (a finished run's lease stays
    /// parked while completion events are sent). A run another invocation ended first is
    /// answered as it stands.
    pub(super) async fn end_wait(
        &self,
        run_id: &str,
        loaded: Loaded<RagCheckpoint>,
    ) -> Result<RunResponse, EngineError> {
        let now = self.clock.now_ms();
        let mut session =
            match Session::lock(self.store, run_id, &loaded, self.lease_until(now), now).await {
                Ok(session) => session,
                Err(EngineError::Lost { .. }) => {
                    let now = self.load_own(run_id).await?;
                    return Ok(self.respond(&now.checkpoint));
                }
                Err(e) => return Err(e),
            };
        let mut cp = loaded.checkpoint;
        cp.state.person.pending = None;
        end_wait(self.graph, &mut cp);
        tracing::info!(
            run_id,
            "nobody answered the run in time: ended with the best answer so far"
        );
        if self.hold_finished && status_of(&cp).is_final() {
            crate::engine::Persist::park(&mut session, &cp).await?;
        } else {
            crate::engine::Persist::save(&mut session, &cp, true).await?;
        }
        record_finished(self.store, self.clock, &cp).await;
        Ok(self.respond(&cp))
    }

    /// The run `run_id` as stored; another caller's run is not found.
    async fn load_own(&self, run_id: &str) -> Result<Loaded<RagCheckpoint>, EngineError> {
        let not_found = || EngineError::NotFound {
            run_id: run_id.to_owned(),
        };
        let loaded = Session::load::<RagCheckpoint>(self.store, run_id)
            .await?
            .ok_or_else(not_found)?;
        if self
            .caller
            .is_some_and(|caller| loaded.checkpoint.state.caller != *caller)
        {
            return Err(not_found());
        }
        Ok(loaded)
    }
}
