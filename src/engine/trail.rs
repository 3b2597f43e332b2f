//! A run's trail: the state as the first step saw it and, for every step after, the JSON
//! patch from the state before it to the state after it. Kept in the checkpoint, so the state
//! after any step can be rebuilt without running anything again (`rewind.rs`): a run forked
//! from a step starts from exactly what that step left.
//!
//! Long texts (passages, answers) are kept once per run in the trail's table (`texts.rs`); the
//! start and the patches refer to them, so a passage moved from list to list is not written
//! again by every step that moves it.
//!
//! A node's branches (a speculation) run concurrently and are merged one by one; the trail
//! gets one patch for the whole fork, at its join, so a step inside a fork has no state of its
//! own to rewind to.

use super::texts::Texts;
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
    /// The long texts the start and the changes refer to (absent from checkpoints written
    /// before the table, whose texts are inline).
    #[serde(default, skip_serializing_if = "Texts::is_empty")]
    texts: Texts,
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

impl<N> Trail<N> {
    /// An empty trail (a run that has not run a step).
    pub(crate) fn new() -> Self {
        Self {
            start: None,
            first: None,
            changes: Vec::new(),
            texts: Texts::default(),
            end: None,
        }
    }

    /// True when nothing is kept (the checkpoint then leaves the field out).
    pub(crate) fn is_empty(&self) -> bool {
        self.start.is_none() && self.changes.is_empty()
    }

    /// True once the state before the first step is kept.
    pub(super) fn started(&self) -> bool {
        self.start.is_some()
    }

    /// The state after the first `applied` changes, its texts in place.
    pub(super) fn state_after(&self, applied: usize) -> Result<Value, RewindError> {
        let state = self.rebuild(applied)?;
        (self.texts.resolve(state))
            .map_err(|d| RewindError::Corrupt(format!("no text {:?} is kept", d.0)))
    }

    /// The state after the first `applied` changes, as kept (its texts referred to).
    fn rebuild(&self, applied: usize) -> Result<Value, RewindError> {
        let mut state = self.start.clone().ok_or(RewindError::NoTrail)?;
        for change in &self.changes[..applied] {
            json_patch::patch(&mut state, &change.patch)
                .map_err(|e| RewindError::Corrupt(e.to_string()))?;
        }
        Ok(state)
    }
}

impl<N: Copy> Trail<N> {
    /// Keeps `start`, the state before the first step, which runs `first`.
    pub(super) fn begin(&mut self, start: Value, first: Option<N>) {
        let start = self.texts.intern(start);
        self.end = Some(start.clone());
        self.start = Some(start);
        self.first = first;
    }

    /// Adds the change to `after`, the state once `records` steps are recorded, with the run
    /// going on at `next`. A trail that does not rebuild is left as it is (rewinding it says
    /// so).
    pub(super) fn note(&mut self, records: u32, next: Option<N>, after: Value) {
        let after = self.texts.intern(after);
        let before = match self.end.take() {
            Some(end) => end,
            None => match self.rebuild(self.changes.len()) {
                Ok(end) => end,
                Err(_) => return,
            },
        };
        self.changes.push(Change {
            records,
            next,
            patch: json_patch::diff(&before, &after),
        });
        self.end = Some(after);
    }

    /// Where step `step` stands: how many changes lead to the state after it and the node
    /// after it (`0` changes and the first node for step `0`).
    pub(super) fn at(&self, step: u32) -> Result<(usize, Option<N>), RewindError> {
        if self.start.is_none() {
            return Err(RewindError::NoTrail);
        }
        if step == 0 {
            return Ok((0, self.first));
        }
        match self.changes.iter().position(|c| c.records == step) {
            Some(at) => Ok((at + 1, self.changes[at].next)),
            None => Err(self.unsettled(step)),
        }
    }

    /// Why `step` has no change of its own: it ran among branches (between two settled
    /// changes), or the trail does not reach it.
    fn unsettled(&self, step: u32) -> RewindError {
        let settled = || self.changes.iter().map(|c| c.records);
        let before = settled().filter(|&r| r < step).max().unwrap_or(0);
        match settled().find(|&r| r > step) {
            Some(after) => RewindError::InsideBranches {
                step,
                before,
                after,
            },
            None => RewindError::Corrupt(format!("no state is kept for step {step}")),
        }
    }

    /// The trail of the first `applied` changes (a fork's, which goes on from there).
    pub(super) fn prefix(&self, applied: usize) -> Self {
        Self {
            start: self.start.clone(),
            first: self.first,
            changes: self.changes[..applied].to_vec(),
            texts: self.texts.clone(),
            end: None,
        }
    }

    /// Makes the start unreadable (a test of an altered trail).
    #[cfg(test)]
    pub(super) fn spoil(&mut self) {
        self.start = Some(Value::String("not a state".into()));
    }

    /// Forgets the change of `records` (a test of a step without one).
    #[cfg(test)]
    pub(super) fn drop_change(&mut self, records: u32) {
        self.changes.retain(|c| c.records != records);
    }
}
