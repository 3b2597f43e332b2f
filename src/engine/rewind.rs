//! Rewinding a run to any step: the checkpoint notes what each step changed in its trail
//! (`trail.rs`) as the run goes, and [`Checkpoint::rewind`] rebuilds the state after a step
//! from it, with the records and usage until then, without running anything again;
//! [`Checkpoint::from_rewound`] makes that the first checkpoint of a new run.

use super::trail::{RewindError, Trail};
use super::{Checkpoint, NodeId, StepRecord};
use crate::usage::Usage;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

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

impl<S: Serialize + DeserializeOwned, N: NodeId> Checkpoint<S, N> {
    /// Notes the state before the first step (once).
    pub(super) fn trail_begin(&mut self) {
        if !self.trail.started() && self.records.is_empty() {
            let start = to_value(&self.state);
            self.trail.begin(start, self.next);
        }
    }

    /// Notes what the step (or fork) just recorded changed, unless a fork is still running.
    pub(super) fn trail_step(&mut self) {
        if self.branching.is_some() || !self.trail.started() {
            return;
        }
        let records = u32::try_from(self.records.len()).unwrap_or(u32::MAX);
        let after = to_value(&self.state);
        self.trail.note(records, self.next, after);
    }

    /// The state right after step `step` (`0`: before the first), rebuilt from the trail
    /// without running anything, with the records and usage of the steps until then.
    pub fn rewind(&self, step: u32) -> Result<Rewound<S, N>, RewindError> {
        let steps = u32::try_from(self.records.len()).unwrap_or(u32::MAX);
        if step > steps {
            return Err(RewindError::PastEnd { step, steps });
        }
        let (applied, next) = self.trail.at(step)?;
        let Some(next) = next else {
            return Err(RewindError::AtEnd { step });
        };
        let state = self.trail.state_after(applied)?;
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
            trail: self.trail.prefix(applied),
        })
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
        cp.trail.spoil();
        assert!(matches!(cp.rewind(2), Err(RewindError::Corrupt(_))));
        let mut cp = run();
        cp.trail.drop_change(2);
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
