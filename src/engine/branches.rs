//! Forks: a node whose branches run concurrently ([`Graph::branches`]).
//!
//! Each branch is admitted against the step limit, the deadline budget and the token budget
//! before it starts, counting the steps and tokens promised to the siblings started with it;
//! a branch that cannot fit is not started (nor any declared after it), and the run stops
//! with that limit once the started ones finished, exactly where a sequential run would have.
//! Each finished branch is merged into the state, recorded as a step of its own in the order
//! the graph declared (whatever order they finish in) and checkpointed at once: one write per
//! branch, as for any step. The fork stays in the checkpoint until it joins, so a resumed run
//! (after a crash, a deadline or a transient failure) runs only the branches not recorded yet.
//! Once every branch is merged, [`Graph::join`] chooses where the run goes, in the same write
//! as the last branch's record.

use super::admit::{admit, stop, InFlight};
use super::{
    BranchOutput, Branching, Budget, Checkpoint, EngineError, FailedAt, Graph, Limit, NodeFailure,
    NodeId, Persist, Phase, StepCtx, StepRecord,
};
use crate::clock::Clock;
use crate::error::Classify;
use crate::usage::Usage;
use futures::stream::{FuturesUnordered, StreamExt};
use tracing::Instrument;

/// How the run goes on after a fork ran.
pub(super) enum Flow {
    /// Joined: the run goes on at the join's choice.
    Continue,
    /// Joined at the end of the graph: the last write (releasing the lease) is done.
    Finished,
    /// A limit or a failure stopped the fork; the checkpoint keeps it for a resume.
    Stopped,
}

/// True when `node` is a fork: one is in progress there, or the graph declares branches for
/// it now (the list is then kept in the checkpoint, so a resume runs the same branches).
pub(super) fn forks_at<G: Graph>(
    graph: &G,
    cp: &mut Checkpoint<G::State, G::Node>,
    node: G::Node,
) -> bool {
    if cp.branching.is_some() {
        return true;
    }
    let branches = graph.branches(node, &cp.state);
    if branches.is_empty() {
        return false;
    }
    cp.branching = Some(Branching {
        branches,
        done: Vec::new(),
        first_record: cp.records.len(),
    });
    true
}

/// Runs the fork at `node`: admits its pending branches, runs those admitted concurrently,
/// records and checkpoints each as it finishes, and joins once all are recorded.
///
/// While a finished branch is checkpointed its siblings are not polled (their requests stay
/// in flight); a store write takes milliseconds, far less than a model call.
pub(super) async fn run_fork<G, P>(
    graph: &G,
    cp: &mut Checkpoint<G::State, G::Node>,
    node: G::Node,
    budget: &Budget,
    clock: &dyn Clock,
    persist: &mut P,
) -> Result<Flow, EngineError>
where
    G: Graph,
    P: Persist<Checkpoint<G::State, G::Node>> + ?Sized,
{
    let pending = cp
        .branching
        .as_ref()
        .map(Branching::pending)
        .unwrap_or_default();
    if pending.is_empty() {
        // Recorded but not joined (not written by this engine, which joins in the last
        // branch's write): join now; the next write persists it.
        if join(graph, cp, node, wait_until(graph, clock)) {
            super::wait::save(persist, cp, true).await?;
            return Ok(Flow::Finished);
        }
        return Ok(Flow::Continue);
    }
    let mut in_flight = InFlight::default();
    let mut admitted = Vec::new();
    let mut refused = None;
    for branch in pending {
        match admit(graph, cp, branch, budget, clock, in_flight) {
            Ok(tokens) => {
                in_flight.steps += 1;
                in_flight.tokens = in_flight.tokens.saturating_add(tokens);
                admitted.push(branch);
            }
            Err(limit) => {
                tracing::warn!(
                    branch = branch.name(),
                    limit = limit.as_str(),
                    "branch not started"
                );
                refused = Some(limit);
                break;
            }
        }
    }

    // Branches read a copy of the state taken now; finished ones are merged into the real
    // one while the others still run.
    let snapshot = cp.state.clone();
    let run_id = cp.run_id.clone();
    let ctxs: Vec<StepCtx<'_>> = admitted
        .iter()
        .map(|&b| StepCtx::new(b.name(), &run_id, clock, budget, graph.retry_policy(b)))
        .collect();
    let mut running: FuturesUnordered<_> = admitted
        .iter()
        .zip(&ctxs)
        .map(|(&branch, ctx)| {
            let state = &snapshot;
            // A branch is a step: its own span, as the runner gives every step.
            let attempt = cp.records.iter().filter(|r| r.name == branch).count() + 1;
            let span = crate::spans::step(branch.name(), &run_id, attempt);
            async move {
                let started = clock.now_micros();
                let result = graph
                    .branch(branch, state, ctx)
                    .instrument(span.clone())
                    .await;
                span.record("tokens", ctx.usage().total());
                span.record("outcome", crate::error::outcome(&result));
                let elapsed = clock.now_micros().saturating_sub(started);
                (branch, ctx, started, elapsed, result)
            }
        })
        .collect();
    tracing::info!(
        node = node.name(),
        branches = admitted.len(),
        "fork started"
    );

    let mut failures = Vec::new();
    while let Some((branch, ctx, started, elapsed, result)) = running.next().await {
        cp.infra_retries += ctx.retries();
        let used = ctx.usage();
        cp.usage.add(&used);
        match result {
            Ok(out) => {
                let timing = (started, elapsed);
                let complete = record_branch(graph, cp, branch, Ok(out), timing, used);
                let last = complete && join(graph, cp, node, wait_until(graph, clock));
                cp.trail_step();
                super::wait::save(persist, cp, last).await?;
                if last {
                    return Ok(Flow::Finished);
                }
            }
            Err(error) => {
                // The siblings still finish and are recorded: a resume will not repeat them.
                let out_of_budget = error.is_transient() && ctx.ran_out_of_budget();
                failures.push((branch, error, out_of_budget, (started, elapsed), used));
            }
        }
    }
    drop(running);

    // A failed branch its finished siblings made moot is abandoned, and the fork joins
    // without it; the first needed one decides how the run stops.
    let (moot, needed): (Vec<_>, Vec<_>) = failures
        .into_iter()
        .partition(|f| !graph.branch_needed(node, f.0, &cp.state));
    if needed.is_empty() && !moot.is_empty() {
        let mut last = false;
        for (branch, error, _, timing, used) in moot {
            tracing::warn!(branch = branch.name(), %error, "branch failed, not needed: abandoned");
            let complete = record_branch(graph, cp, branch, Err(error.to_string()), timing, used);
            last = complete && join(graph, cp, node, wait_until(graph, clock));
        }
        if let Some(limit) = refused {
            stop(graph, cp, limit);
            return Ok(Flow::Stopped);
        }
        cp.trail_step();
        super::wait::save(persist, cp, last).await?;
        return Ok(if last { Flow::Finished } else { Flow::Continue });
    }
    if let Some((branch, error, out_of_budget, ..)) = needed.into_iter().next() {
        if out_of_budget {
            tracing::warn!(branch = branch.name(), %error, "deadline reached while retrying");
            stop(graph, cp, Limit::Deadline);
        } else if graph.on_unavailable(&mut cp.state, branch, &error) {
            tracing::warn!(branch = branch.name(), %error, "unavailable after its retries: ending with the best answer so far");
            cp.branching = None;
            cp.next = None;
            cp.phase = Phase::Finished;
        } else {
            tracing::error!(branch = branch.name(), %error, class = ?error.class(), "branch failed");
            cp.phase = Phase::Failed;
            cp.failure = Some(NodeFailure {
                node: FailedAt::Node(branch),
                class: error.class(),
                message: error.to_string(),
            });
        }
        return Ok(Flow::Stopped);
    }
    if let Some(limit) = refused {
        stop(graph, cp, limit);
        return Ok(Flow::Stopped);
    }
    Ok(Flow::Continue)
}

/// Merges a finished branch (or notes an abandoned one: `Err` with its error) and records it
/// in its declared place; `true` when it was the last one (the fork joins then).
fn record_branch<G: Graph>(
    graph: &G,
    cp: &mut Checkpoint<G::State, G::Node>,
    branch: G::Node,
    out: Result<BranchOutput<G::Merge>, String>,
    (started_micros, elapsed_micros): (u64, u64),
    used: Usage,
) -> bool {
    let details = match out {
        Ok(out) => {
            graph.merge(&mut cp.state, out.merge);
            out.details
        }
        Err(error) => serde_json::json!({ "abandoned": true, "error": error }),
    };
    let seconds = elapsed_micros as f64 / 1e6;
    let record = StepRecord::new(branch, started_micros, seconds, details, used);
    let Some(branching) = cp.branching.as_mut() else {
        return false;
    };
    let slot = branching.slot(branch).min(cp.records.len());
    branching.done.push(branch);
    let complete = branching.complete();
    cp.records.insert(slot, record);
    cp.latest = Some(slot);
    cp.steps += 1;
    tracing::info!(
        branch = branch.name(),
        step = cp.steps,
        seconds,
        "branch done"
    );
    complete
}

/// When a wait for a person that starts now runs out ([`Graph::wait_limit`]).
fn wait_until<G: Graph>(graph: &G, clock: &dyn Clock) -> u64 {
    clock
        .now_ms()
        .saturating_add(super::wait::millis(graph.wait_limit()))
}

/// Ends the fork at `node`: the graph chooses where the run goes; `true` when this invocation
/// stops there (the run ended, or waits for a person until `wait_until_ms`).
fn join<G: Graph>(
    graph: &G,
    cp: &mut Checkpoint<G::State, G::Node>,
    node: G::Node,
    wait_until_ms: u64,
) -> bool {
    cp.branching = None;
    let transition = graph.join(node, &mut cp.state);
    super::wait::go_on(cp, transition, wait_until_ms)
}

#[cfg(test)]
#[path = "branches_tests.rs"]
mod tests;
