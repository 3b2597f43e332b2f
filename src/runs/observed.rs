//! What a run's checkpoint writes do besides writing: each newly saved step is told to the
//! run's watchers (`step` events), and a run that must be picked up again keeps its lease
//! parked instead of dropping it (a suspended run, until its continuation is queued; a finished
//! one, until its completion event is recorded sent).

use crate::engine::{EngineError, Persist, Phase};
use crate::rag::{status_of, Events, Outcome, RagCheckpoint, RunEvent};
use async_trait::async_trait;

/// True when `cp` is suspended, waiting for a continuation: the invocation that stopped it
/// parks its lease instead of releasing it ([`Persist::park`]), so a continuation takes the
/// run at once, and if the continuation is never queued (the invocation died between its
/// last write and the send) the lease lapses and the sweeper re-queues the run.
fn parked(cp: &RagCheckpoint) -> bool {
    cp.phase == Phase::Stopped && cp.state.outcome == Some(Outcome::Suspended)
}

/// Persists through `inner`, then tells the run's watchers about each newly saved step.
pub(super) struct Observed<'e, P> {
    inner: P,
    events: &'e Events,
    reported: usize,
    /// Park the lease of a finished run (see `Workflow::with_completion_events`).
    hold_finished: bool,
}

impl<'e, P> Observed<'e, P> {
    pub(super) fn new(
        inner: P,
        events: &'e Events,
        cp: &RagCheckpoint,
        hold_finished: bool,
    ) -> Self {
        Self {
            inner,
            events,
            reported: cp.settled_records(),
            hold_finished,
        }
    }
}

#[async_trait]
impl<P: Persist<RagCheckpoint> + Send> Persist<RagCheckpoint> for Observed<'_, P> {
    async fn save(&mut self, cp: &RagCheckpoint, release: bool) -> Result<(), EngineError> {
        let held = self.hold_finished && status_of(cp).is_final();
        if release && (parked(cp) || held) {
            self.inner.park(cp).await?;
        } else {
            self.inner.save(cp, release).await?;
        }
        self.report(cp);
        Ok(())
    }

    async fn park_until(&mut self, cp: &RagCheckpoint, until_ms: u64) -> Result<(), EngineError> {
        // No invocation holds a waiting run; the parked lease is its wait's timer.
        self.inner.park_until(cp, until_ms).await?;
        self.report(cp);
        Ok(())
    }
}

impl<P> Observed<'_, P> {
    /// Tells the run's watchers about each step saved since the last report.
    fn report(&mut self, cp: &RagCheckpoint) {
        // Only settled records: a branch that finished before a sibling declared ahead of it
        // is told once that sibling is recorded too, so each step keeps its number.
        let settled = cp.settled_records();
        for index in self.reported..settled {
            if let Some(event) = RunEvent::step_at(cp, index) {
                self.events.emit(event);
            }
        }
        self.reported = self.reported.max(settled);
    }
}
