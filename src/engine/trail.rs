//! A run's trail: the state as the first step saw it and, for every step after, the JSON
//! patch from the state before it to the state after it. Kept in the checkpoint, so the state
//! after any step can be rebuilt without running anything again ([`Checkpoint::rewind`]): a
//! run forked from a step starts from exactly what that step left.
//!
//! A node's branches (a speculation) run concurrently and are merged one by one; the trail
//! gets one patch for the whole fork, at its join, so a step inside a fork has no state of its
//! own to rewind to.

use super::{Checkpoint, NodeId, StepRecord, Usage};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The start state and one patch per settled step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Trail<N> {
    /// The state before the first step (`None` until it ran; absent from checkpoints written
    /// before trails were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    start: Option<Value>,
    /// The node the first step ran.
    #[serde(default = "Option::default", skip_serializing_if = "Option::is_none")]
    first: Option<N>,
    /// The changes, in the order their steps were saved.
    #[serde(default = "Vec::new", skip_serializing_if = "Vec::is_empty")]
    changes: Vec<Change<N>>,
    /// The state the last change led to (the start, before any): the base of the next patch.
    /// Rebuilt from the trail after a load.
    #[serde(skip)]
    end: Option<Value>,
}

/// What one step (or one whole fork) changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Change<N> {
    /// Step records once it was saved: the step's number.
    records: u32,
    /// The node the run went on to after it (`None`: the run ended there).
    next: Option<N>,
    /// The state before it → the state after it.
    patch: json_patch::Patch,
}

impl<N> Trail<N> {
    /// An empty trail (a run that has not run a step).
    pub(crate) fn new() -> Self {
        Self {
            start: None,
            first: None,
            changes: Vec::new(),
            end: None,
        }
    }

    /// True when nothing is kept (the checkpoint then leaves the field out).
    pub(crate) fn is_empty(&self) -> bool {
        self.start.is_none() && self.changes.is_empty()
    }
}

/// The state after a step, with what the run had done and spent until then.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewound<S, N> {
    /// The step it was rewound to (`0`: before the first).
    pub step: u32,
    /// The state right after that step.
    pub state: S,
    /// The node the run went on to after it.
    pub next: N,
    /// The records of the steps up to it.
    pub records: Vec<StepRecord<N>>,
    /// Tokens and model calls of those steps.
    pub usage: Usage,
    trail: Trail<N>,
}

/// Why a run cannot be rewound to a step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewindError {
    /// The run was recorded before trails were kept.
    #[error("the run was recorded before runs could be forked; run it again instead")]
    NoTrail,
    /// The step is not one of the run's.
    #[error("step {step} is past the run's end: it has {steps} step(s)")]
    PastEnd {
        /// The step asked for.
        step: u32,
        /// Steps the run has.
        steps: u32,
    },
    /// The run ended at that step: nothing comes after it.
    #[error("the run ended at step {step}: there is nothing after it to run again")]
    AtEnd {
        /// The step asked for.
        step: u32,
    },
    /// The step ran among the concurrent branches of a fork (a speculation).
    #[error("step {step} ran among concurrent branches; fork from step {before} or {after}")]
    InsideBranches {
        /// The step asked for.
        step: u32,
        /// The step the branches started after.
        before: u32,
        /// The last step of the branches.
        after: u32,
    },
    /// The stored trail does not rebuild the state (it was altered).
    #[error("the run's stored steps do not rebuild its state: {0}")]
    Corrupt(String),
}

impl<S: Serialize + DeserializeOwned, N: NodeId> Checkpoint<S, N> {
    /// Notes the state before the first step (once).
    pub(super) fn trail_begin(&mut self) {
        if self.trail.start.is_none() && self.records.is_empty() {
            let start = to_value(&self.state);
            self.trail.end = Some(start.clone());
            self.trail.start = Some(start);
            self.trail.first = self.next;
        }
    }

    /// Notes what the step (or fork) just recorded changed, unless a fork is still running.
    pub(super) fn trail_step(&mut self) {
        if self.fork.is_some() || self.trail.start.is_none() {
            return;
        }
        let before = match self.trail.end.take() {
            Some(end) => end,
            None => match self.trail.rebuild(self.trail.changes.len()) {
                Ok(end) => end,
                // A trail that does not rebuild is left as it is: rewinding it says so.
                Err(_) => return,
            },
        };
        let after = to_value(&self.state);
        self.trail.changes.push(Change {
            records: u32::try_from(self.records.len()).unwrap_or(u32::MAX),
            next: self.next,
            patch: json_patch::diff(&before, &after),
        });
        self.trail.end = Some(after);
    }

    /// The state right after step `step` (`0`: before the first), rebuilt from the trail
    /// without running anything, with the records and usage of the steps until then.
    pub fn rewind(&self, step: u32) -> Result<Rewound<S, N>, RewindError> {
        let steps = u32::try_from(self.records.len()).unwrap_or(u32::MAX);
        if step > steps {
            return Err(RewindError::PastEnd { step, steps });
        }
        if self.trail.start.is_none() {
            return Err(RewindError::NoTrail);
        }
        let (applied, next) = if step == 0 {
            (0, self.trail.first)
        } else {
            let at = self.trail.changes.iter().position(|c| c.records == step);
            let Some(at) = at else {
                return Err(self.not_settled(step));
            };
            (at + 1, self.trail.changes[at].next)
        };
        let Some(next) = next else {
            return Err(RewindError::AtEnd { step });
        };
        let state = self.trail.rebuild(applied)?;
        let state =
            serde_json::from_value(state).map_err(|e| RewindError::Corrupt(e.to_string()))?;
        let records = self.records[..step as usize].to_vec();
        let mut usage = Usage::default();
        for record in &records {
            usage.add(&record.usage);
        }
        Ok(Rewound {
            step,
            state,
            next,
            records,
            usage,
            trail: Trail {
                start: self.trail.start.clone(),
                first: self.trail.first,
                changes: self.trail.changes[..applied].to_vec(),
                end: None,
            },
        })
    }

    /// Why `step` has no change of its own: it ran among branches (between two settled
    /// changes), or the trail does not reach it.
    fn not_settled(&self, step: u32) -> RewindError {
        let before = self
            .trail
            .changes
            .iter()
            .map(|c| c.records)
            .filter(|&r| r < step)
            .max()
            .unwrap_or(0);
        match self
            .trail
            .changes
            .iter()
            .map(|c| c.records)
            .find(|&r| r > step)
        {
            Some(after) => RewindError::InsideBranches {
                step,
                before,
                after,
            },
            None => RewindError::Corrupt(format!("no state is kept for step {step}")),
        }
    }

    /// A new run `run_id` that starts where `rewound` stands: its steps, usage and trail so
    /// far, the node after them next, nothing stopped or failed.
    pub fn from_rewound(run_id: impl Into<String>, rewound: Rewound<S, N>) -> Self {
        let mut cp = Checkpoint::new(run_id, rewound.next, rewound.state);
        cp.steps = rewound.step;
        cp.usage = rewound.usage;
        cp.records = rewound.records;
        cp.trail = rewound.trail;
        cp
    }
}

impl<N> Trail<N> {
    /// The state after the first `applied` changes.
    fn rebuild(&self, applied: usize) -> Result<Value, RewindError> {
        let mut state = self.start.clone().ok_or(RewindError::NoTrail)?;
        for change in &self.changes[..applied] {
            json_patch::patch(&mut state, &change.patch)
                .map_err(|e| RewindError::Corrupt(e.to_string()))?;
        }
        Ok(state)
    }
}

/// The state as JSON (a state that does not serialise could not be checkpointed either).
fn to_value<S: Serialize>(state: &S) -> Value {
    serde_json::to_value(state).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    enum N {
        A,
        B,
    }
    impl NodeId for N {
        fn name(self) -> &'static str {
            match self {
                N::A => "a",
                N::B => "b",
            }
        }
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct S {
        docs: Vec<String>,
        answer: Option<String>,
    }

    fn step(cp: &mut Checkpoint<S, N>, node: N, next: Option<N>, change: impl FnOnce(&mut S)) {
        cp.trail_begin();
        change(&mut cp.state);
        cp.records.push(StepRecord::new(
            node,
            0,
            0.0,
            serde_json::json!({}),
            Usage {
                model_calls: 1,
                ..Usage::default()
            },
        ));
        cp.steps += 1;
        cp.next = next;
        cp.trail_step();
    }

    fn run() -> Checkpoint<S, N> {
        let mut cp = Checkpoint::new(
            "r",
            N::A,
            S {
                docs: vec![],
                answer: None,
            },
        );
        step(&mut cp, N::A, Some(N::B), |s| {
            s.docs = vec!["x".into(), "y".into()]
        });
        step(&mut cp, N::B, Some(N::B), |s| s.docs.remove(0).clear());
        step(&mut cp, N::B, None, |s| s.answer = Some("y!".into()));
        cp
    }

    #[test]
    fn every_step_rewinds_to_the_state_it_left_with_the_node_after_it() {
        let cp = run();
        let at1 = cp.rewind(1).unwrap();
        assert_eq!(at1.state.docs, ["x", "y"]);
        assert_eq!(
            (at1.next, at1.records.len(), at1.usage.model_calls),
            (N::B, 1, 1)
        );
        let at2 = cp.rewind(2).unwrap();
        assert_eq!(
            (at2.state.docs.clone(), at2.state.answer.clone()),
            (vec!["y".to_owned()], None)
        );
        let at0 = cp.rewind(0).unwrap();
        assert_eq!(
            (at0.state.docs.len(), at0.next, at0.usage.model_calls),
            (0, N::A, 0)
        );
        assert_eq!(cp.rewind(3), Err(RewindError::AtEnd { step: 3 }));
        assert_eq!(
            cp.rewind(4),
            Err(RewindError::PastEnd { step: 4, steps: 3 })
        );
    }

    #[test]
    fn the_trail_survives_a_store_round_trip_and_a_forked_run_rewinds_again() {
        let stored: Checkpoint<S, N> =
            serde_json::from_slice(&serde_json::to_vec(&run()).unwrap()).unwrap();
        let forked = Checkpoint::from_rewound("f", stored.rewind(1).unwrap());
        assert_eq!((forked.steps, forked.next), (1, Some(N::B)));
        // A loaded checkpoint rebuilds the base of its next patch from the trail.
        let mut forked: Checkpoint<S, N> =
            serde_json::from_slice(&serde_json::to_vec(&forked).unwrap()).unwrap();
        step(&mut forked, N::B, None, |s| s.answer = Some("other".into()));
        let again = forked.rewind(1).unwrap();
        assert_eq!(again.state.docs, ["x", "y"]);
        assert_eq!(forked.rewind(2), Err(RewindError::AtEnd { step: 2 }));
        assert_eq!(forked.state.answer.as_deref(), Some("other"));
    }

    #[test]
    fn a_run_without_a_trail_or_with_an_altered_one_says_so() {
        let mut cp = run();
        cp.trail = Trail::new();
        assert_eq!(cp.rewind(1), Err(RewindError::NoTrail));
        let mut cp = run();
        cp.trail.start = Some(serde_json::json!("not a state"));
        assert!(matches!(cp.rewind(2), Err(RewindError::Corrupt(_))));
        let mut cp = run();
        cp.trail.changes.remove(1);
        assert_eq!(
            cp.rewind(2),
            Err(RewindError::InsideBranches {
                step: 2,
                before: 1,
                after: 3
            })
        );
    }
}
