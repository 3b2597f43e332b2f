//! What a workflow gives the engine: typed node ids, one async step per node, and the
//! transition each step chooses. The engine loop owns every limit; nodes own none.

use super::{Limit, StepCtx};
use crate::error::Classify;
use crate::retry::RetryPolicy;
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;
use std::time::Duration;

/// A node id: a closed enum owned by the workflow.
pub trait NodeId: Copy + Eq + Debug + Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The name shown in step records and logs.
    fn name(self) -> &'static str;
}

/// Where the run goes after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition<N> {
    /// Run this node next.
    Next(N),
    /// The workflow is finished.
    End,
    /// Wait for a person: the invocation ends here, holding no lease, and the run goes on at
    /// this node once it is answered ([`super::Checkpoint::answer_wait`]), or ends with
    /// [`Limit::InterruptTimeout`] when nobody answers within [`Graph::wait_limit`].
    Wait(N),
}

/// A step's result: the transition and what to show in its step record.
#[derive(Debug, Clone, PartialEq)]
pub struct StepOutput<N> {
    /// Next node, or the end.
    pub next: Transition<N>,
    /// Small JSON shown in `workflow_steps[].details`.
    pub details: serde_json::Value,
}

impl<N> StepOutput<N> {
    /// Continue with `node`.
    pub fn next(node: N, details: serde_json::Value) -> Self {
        Self {
            next: Transition::Next(node),
            details,
        }
    }

    /// Wait for a person, then go on at `node` ([`Transition::Wait`]).
    pub fn wait(node: N, details: serde_json::Value) -> Self {
        Self {
            next: Transition::Wait(node),
            details,
        }
    }

    /// Finish the workflow.
    pub fn end(details: serde_json::Value) -> Self {
        Self {
            next: Transition::End,
            details,
        }
    }
}

/// A finished branch: what to merge into the state and what its step record shows.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchOutput<M> {
    /// Handed to [`Graph::merge`].
    pub merge: M,
    /// Small JSON shown in the branch's `workflow_steps[].details`.
    pub details: serde_json::Value,
}

/// A bounded state graph.
///
/// Contract for `step`: do the I/O first and mutate `state` only once it succeeded, so a step
/// that fails (and is retried or resumed later) leaves the state as it was.
#[async_trait]
pub trait Graph: Send + Sync {
    /// The run's state, checkpointed after every step (cloned once per fork, so its
    /// branches can read it while finished ones are merged).
    type State: Clone + Serialize + DeserializeOwned + Send + Sync;
    /// The node ids.
    type Node: NodeId;
    /// Errors of steps, classified once.
    type Error: std::error::Error + Classify + Send + Sync + 'static;
    /// What a finished branch hands back, merged into the state by [`Graph::merge`] (`()`
    /// for a graph without branches).
    type Merge: Send;

    /// The first node of a new run.
    fn start(&self, state: &Self::State) -> Self::Node;

    /// Infrastructure retry policy of a node's remote calls.
    fn retry_policy(&self, node: Self::Node) -> RetryPolicy;

    /// The least time a node needs; the engine does not start it with less budget left
    /// (it also uses the longest duration this node has taken so far in the run).
    fn estimate(&self, node: Self::Node) -> Duration;

    /// Tokens a node is expected to use when it has not run yet in this run; the engine does
    /// not start it when the run's token budget cannot cover this (or, once the node has run,
    /// its largest use so far). Zero for nodes that call no model.
    fn token_estimate(&self, _node: Self::Node, _state: &Self::State) -> u64 {
        0
    }

    /// Runs one node.
    async fn step(
        &self,
        node: Self::Node,
        state: &mut Self::State,
        ctx: &StepCtx<'_>,
    ) -> Result<StepOutput<Self::Node>, Self::Error>;

    /// The branches `node` forks into, in the order their step records are kept: they run
    /// concurrently instead of `node` running as one step, then [`Graph::join`] chooses
    /// where the run goes. Empty (the default) for an ordinary node. The engine keeps the list
    /// in the checkpoint, so a resumed fork runs the same branches.
    fn branches(&self, _node: Self::Node, _state: &Self::State) -> Vec<Self::Node> {
        Vec::new()
    }

    /// Runs one branch of a fork over the state as it was when the fork started (plus the
    /// branches merged before a resume): it may not change the state, since its siblings run
    /// at the same time; what it found goes into the state through [`Graph::merge`].
    async fn branch(
        &self,
        branch: Self::Node,
        state: &Self::State,
        ctx: &StepCtx<'_>,
    ) -> Result<BranchOutput<Self::Merge>, Self::Error>;

    /// Puts a finished branch's result into the state, before its step is checkpointed.
    /// Must not do I/O, nor change what a sibling branch still running reads.
    fn merge(&self, state: &mut Self::State, merge: Self::Merge);

    /// Called once every branch of the fork at `node` is merged: chooses where the run goes.
    /// Must not do I/O.
    fn join(&self, node: Self::Node, state: &mut Self::State) -> Transition<Self::Node>;

    /// How long a run may wait for a person ([`Transition::Wait`]) before it ends with
    /// [`Limit::InterruptTimeout`]. Default: a day.
    fn wait_limit(&self) -> Duration {
        Duration::from_secs(24 * 60 * 60)
    }

    /// Called once when a limit stops the run, before the final checkpoint, to leave the best
    /// answer so far in the state. Must not do I/O.
    fn on_limit(&self, _state: &mut Self::State, _limit: Limit) {}

    /// Whether the fork at `node` still needs `branch` now that its finished siblings are
    /// merged into `state`. A failed branch that is not needed is abandoned (recorded as
    /// such) and the fork joins without it; a needed one fails the run (or
    /// [`Graph::on_unavailable`]). Default: every branch is needed.
    fn branch_needed(&self, _node: Self::Node, _branch: Self::Node, _state: &Self::State) -> bool {
        true
    }

    /// Called when `node` (or a needed branch) failed, with budget left: after its retries
    /// for a transient error, at once for a permanent one. `true` ends the run now with the
    /// best answer so far, which this call leaves in the state; `false` (the default) fails
    /// the run (resumable when the error is transient). The graph decides which errors
    /// qualify. Must not do I/O.
    fn on_unavailable(
        &self,
        _state: &mut Self::State,
        _node: Self::Node,
        _error: &Self::Error,
    ) -> bool {
        false
    }
}
