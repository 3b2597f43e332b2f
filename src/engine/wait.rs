//! Waiting for a person ([`Transition::Wait`]): where a step's transition leaves the run, the
//! write that ends an invocation whose run now waits (a parked lease that lapses when the wait
//! runs out), and the end of a wait nobody answered.

use super::admit::stop;
use super::{Checkpoint, EngineError, Graph, Limit, NodeId, Persist, Phase, Transition};

/// Moves `cp` to `transition`; `true` when this invocation stops there: the run finished, or
/// waits for a person until `wait_until_ms` (its final write then holds no lease).
pub(super) fn go_on<S, N: NodeId>(
    cp: &mut Checkpoint<S, N>,
    transition: Transition<N>,
    wait_until_ms: u64,
) -> bool {
    match transition {
        Transition::Next(next) => {
            cp.next = Some(next);
            false
        }
        Transition::End => {
            cp.next = None;
            cp.phase = Phase::Finished;
            true
        }
        Transition::Wait(next) => {
            tracing::info!(resumes_at = next.name(), "waiting for a person");
            cp.next = Some(next);
            cp.phase = Phase::Waiting;
            cp.waiting_until_ms = Some(wait_until_ms);
            true
        }
    }
}

/// Ends a run whose wait for a person ran out: stopped by [`Limit::InterruptTimeout`], with
/// the best answer so far ([`Graph::on_limit`]). Its caller writes it.
pub(crate) fn end_wait<G: Graph>(graph: &G, cp: &mut Checkpoint<G::State, G::Node>) {
    cp.waiting_until_ms = None;
    stop(graph, cp, Limit::InterruptTimeout);
}

/// Writes `cp` after a step; `last` releases the lease, or for a run that now waits for a
/// person parks one that lapses when the wait runs out ([`Persist::park_until`]).
pub(super) async fn save<C, P>(persist: &mut P, cp: &C, last: bool) -> Result<(), EngineError>
where
    C: WaitsUntil + Sync,
    P: Persist<C> + ?Sized,
{
    match (last, cp.waiting_until()) {
        (true, Some(until)) => persist.park_until(cp, until).await,
        _ => persist.save(cp, last).await,
    }
}

/// When a checkpoint's wait for a person runs out, while it waits.
pub(super) trait WaitsUntil {
    fn waiting_until(&self) -> Option<u64>;
}

impl<S, N> WaitsUntil for Checkpoint<S, N> {
    fn waiting_until(&self) -> Option<u64> {
        (self.phase == Phase::Waiting)
            .then_some(self.waiting_until_ms)
            .flatten()
    }
}

/// `duration` in whole milliseconds, saturating.
pub(super) fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
