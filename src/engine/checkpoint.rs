//! The checkpoint: everything needed to resume a run, written after every step.

use super::trail::Trail;
use super::{Branching, Budget, Limit, NodeId, StepRecord, WorkflowVersion};
use crate::error::ErrorClass;
use crate::usage::Usage;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Where a run stands, as far as the engine knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Phase {
    /// Created or resumable: `next` is the node to run.
    Running,
    /// The graph reached its end.
    Finished,
    /// A limit stopped it; `next` is kept so a deadline stop can be resumed.
    Stopped,
    /// A node failed; transient failures keep `next` and can be resumed.
    Failed,
    /// Waiting for a person ([`super::Transition::Wait`]): `next` runs once answered, and
    /// `waiting_until_ms` bounds the wait.
    Waiting,
}

/// Where a run failed: in one of its nodes, or in its queue before any node ran (a message
/// that could not be processed). Serialised as the node's name, or `queue`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailedAt<N> {
    /// A node's step failed.
    Node(N),
    /// The run's queue message could not be processed (a poison message).
    Queue,
    /// The checkpoint was written by a workflow version the running code cannot resume.
    Version,
}

/// Wire name of [`FailedAt::Queue`].
const QUEUE: &str = "queue";
/// Wire name of [`FailedAt::Version`].
const VERSION: &str = "workflow_version";

impl<N: NodeId> FailedAt<N> {
    /// The name shown to callers: the node's, or `queue`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            FailedAt::Node(node) => node.name(),
            FailedAt::Queue => QUEUE,
            FailedAt::Version => VERSION,
        }
    }
}

impl<N: NodeId> std::fmt::Display for FailedAt<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Compares with a wire name, as callers reading a response do.
impl<N: NodeId> PartialEq<&str> for FailedAt<N> {
    fn eq(&self, other: &&str) -> bool {
        self.name() == *other
    }
}

impl<N: Serialize> Serialize for FailedAt<N> {
    fn serialize<Z: Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        match self {
            FailedAt::Node(node) => node.serialize(serializer),
            FailedAt::Queue => serializer.serialize_str(QUEUE),
            FailedAt::Version => serializer.serialize_str(VERSION),
        }
    }
}

impl<'de, N: Deserialize<'de>> Deserialize<'de> for FailedAt<N> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        match name.as_str() {
            QUEUE => return Ok(FailedAt::Queue),
            VERSION => return Ok(FailedAt::Version),
            _ => {}
        }
        let node = serde::de::value::StrDeserializer::<D::Error>::new(&name);
        N::deserialize(node).map(FailedAt::Node)
    }
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct NodeFailure<N> {
    /// Where it failed.
    pub node: FailedAt<N>,
    /// Transient or permanent.
    pub class: ErrorClass,
    /// The error message (never a secret).
    pub message: String,
}

/// A run's checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint<S, N> {
    /// Run id.
    pub run_id: String,
    /// The workflow version of the code that wrote it; `None` in checkpoints written before
    /// versions were recorded (see [`super::Versioning`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_version: Option<WorkflowVersion>,
    /// Engine phase.
    pub(crate) phase: Phase,
    /// The node to run next (`None` once finished).
    pub next: Option<N>,
    /// Steps taken so far, across every invocation.
    pub steps: u32,
    /// Limits that stopped the run, in order.
    pub limits_hit: Vec<Limit>,
    /// Executed steps.
    pub records: Vec<StepRecord<N>>,
    /// Infrastructure retries made so far (silent, not steps).
    pub(crate) infra_retries: u32,
    /// Tokens and model calls so far, across every invocation (failed steps included).
    #[serde(default)]
    pub usage: Usage,
    /// Set when a node failed.
    pub(crate) failure: Option<NodeFailure<N>>,
    /// While waiting for a person: when the wait runs out (epoch ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) waiting_until_ms: Option<u64>,
    /// The branches of `next` while they run: which ones are recorded already. Stored as
    /// `fork`, its name in checkpoints written before it was renamed.
    // A default function, not `default`: serde would require `N: Default` for that.
    #[serde(
        rename = "fork",
        default = "Option::default",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) branching: Option<Branching<N>>,
    /// Index of the record the latest step added (branches are recorded in their declared
    /// order, so it need not be the last one). Not stored: it describes the last write.
    #[serde(skip)]
    pub(crate) latest: Option<usize>,
    /// The state before the first step and what each step changed: any step's state can be
    /// rebuilt ([`Checkpoint::rewind`]).
    #[serde(default = "Trail::new", skip_serializing_if = "Trail::is_empty")]
    pub(crate) trail: Trail<N>,
    /// Workflow state.
    pub state: S,
}

impl<S, N> Checkpoint<S, N> {
    /// A fresh run that starts at `start`.
    pub fn new(run_id: impl Into<String>, start: N, state: S) -> Self {
        Self {
            run_id: run_id.into(),
            workflow_version: None,
            phase: Phase::Running,
            next: Some(start),
            steps: 0,
            limits_hit: Vec::new(),
            records: Vec::new(),
            infra_retries: 0,
            usage: Usage::default(),
            failure: None,
            waiting_until_ms: None,
            branching: None,
            latest: None,
            trail: Trail::new(),
            state,
        }
    }

    /// The record the latest step added: the last one, unless a branch recorded in its
    /// declared place before a sibling that finished earlier.
    #[cfg(test)]
    pub(crate) fn latest_record(&self) -> Option<&StepRecord<N>> {
        self.latest
            .and_then(|i| self.records.get(i))
            .or(self.records.last())
    }

    /// True when an invocation with `budget` could make progress: not finished, not failed
    /// for good, not stopped by a step limit it would hit again, nor by its token budget.
    pub(crate) fn can_advance(&self, budget: &Budget) -> bool {
        match self.phase {
            Phase::Running => true,
            Phase::Stopped => match self.limits_hit.last() {
                Some(Limit::Deadline) => true,
                Some(Limit::StepLimit) => self.steps < budget.max_steps,
                // What the run may spend was its caller's decision; its answer is final.
                Some(Limit::TokenBudget) => false,
                // Nobody answered in time: the best answer so far is final.
                Some(Limit::InterruptTimeout) => false,
                None => false,
            },
            Phase::Failed => self
                .failure
                .as_ref()
                .is_some_and(|f| f.class == ErrorClass::Transient),
            // Only an answer moves it on ([`Checkpoint::answer_wait`]).
            Phase::Finished | Phase::Waiting => false,
        }
    }

    /// True when the run waits for a person and its wait ran out at `now_ms`.
    pub(crate) fn wait_expired(&self, now_ms: u64) -> bool {
        self.phase == Phase::Waiting && self.waiting_until_ms.is_some_and(|until| now_ms >= until)
    }

    /// The waiting run was answered: it goes on at `next` (the node its wait named, or
    /// another the answer chose) when next advanced. The wait's step is not run again.
    pub(crate) fn answer_wait(&mut self, next: N) {
        debug_assert_eq!(self.phase, Phase::Waiting);
        self.phase = Phase::Running;
        self.next = Some(next);
        self.waiting_until_ms = None;
    }

    /// Total seconds spent in steps; `0.0` before the first step.
    pub(crate) fn total_processing_time(&self) -> f64 {
        // Folded from +0.0: `sum` of no f64 is -0.0, which prints as "-0.000s".
        self.records
            .iter()
            .fold(0.0, |total, r| total + r.processing_time)
    }
}

impl<S, N: NodeId> Checkpoint<S, N> {
    /// How many records, from the first, are in their final place: a branch still running is
    /// recorded in its declared place, before siblings that finished earlier, so only the
    /// records before it are settled. Every record is settled outside branching. Step events are
    /// numbered by these places, so a live stream and a replay number each step alike.
    pub(crate) fn settled_records(&self) -> usize {
        self.branching
            .as_ref()
            .map_or(self.records.len(), |branching| {
                branching.settled().min(self.records.len())
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_without_steps_spent_zero_seconds_not_minus_zero() {
        let cp = Checkpoint::new("no-steps", (), ());
        let total = cp.total_processing_time();
        assert!(total == 0.0 && total.is_sign_positive(), "{total:?}");
        assert_eq!(format!("{total:.3}s"), "0.000s");
    }
}
