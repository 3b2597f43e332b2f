//! Admission: whether a node may start now (the step limit, the deadline budget, the token
//! budget), and stopping a run at the limit that refused it. Shared by the run loop and forks.

use super::{Budget, Checkpoint, Graph, Limit, NodeId, Phase};
use crate::clock::Clock;
use std::time::Duration;

/// Steps and tokens already promised to branches started alongside the one being admitted:
/// they count against the limits as if they had been used.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct InFlight {
    pub(super) steps: u32,
    pub(super) tokens: u64,
}

/// Whether `node` may start now, with `in_flight` already promised to its running siblings:
/// `Ok` with the tokens it is expected to use, or the limit that forbids it: the step limit,
/// then the deadline budget (the node's estimate or its longest run so far), then the token
/// budget (its estimate or its largest use so far).
pub(super) fn admit<G: Graph>(
    graph: &G,
    cp: &Checkpoint<G::State, G::Node>,
    node: G::Node,
    budget: &Budget,
    clock: &dyn Clock,
    in_flight: InFlight,
) -> Result<u64, Limit> {
    if cp.steps.saturating_add(in_flight.steps) >= budget.max_steps {
        return Err(Limit::StepLimit);
    }
    let needed = graph.estimate(node).max(longest_so_far(cp, node));
    if budget.remaining(clock.now_ms()) < needed {
        return Err(Limit::Deadline);
    }
    let Some(max) = budget.max_tokens else {
        return Ok(0);
    };
    let tokens =
        largest_use_so_far(cp, node).unwrap_or_else(|| graph.token_estimate(node, &cp.state));
    let promised = cp.usage.total().saturating_add(in_flight.tokens);
    if promised.saturating_add(tokens) > max {
        return Err(Limit::TokenBudget);
    }
    Ok(tokens)
}

/// Stops the run at `limit`: the graph may mark its state (the best answer so far).
pub(super) fn stop<G: Graph>(graph: &G, cp: &mut Checkpoint<G::State, G::Node>, limit: Limit) {
    tracing::warn!(
        steps = cp.steps,
        limit = limit.as_str(),
        "limit reached, stopping with the best answer so far"
    );
    cp.phase = Phase::Stopped;
    cp.limits_hit.push(limit);
    graph.on_limit(&mut cp.state, limit);
}

/// The most tokens one step of this node has used in this run, if it ran (from the step
/// records, so it survives resumes).
fn largest_use_so_far<S, N: NodeId>(cp: &Checkpoint<S, N>, node: N) -> Option<u64> {
    cp.records
        .iter()
        .filter(|r| r.name == node)
        .map(|r| r.usage.total())
        .max()
}

/// The longest this node has taken in this run, or, for a node not run yet, the longest any
/// step has taken: measured durations are a better estimate than any constant.
fn longest_so_far<S, N: NodeId>(cp: &Checkpoint<S, N>, node: N) -> Duration {
    let longest = |same_node: bool| {
        cp.records
            .iter()
            .filter(|r| !same_node || r.name == node)
            .map(|r| Duration::from_secs_f64(r.processing_time))
            .max()
    };
    longest(true).or_else(|| longest(false)).unwrap_or_default()
}
