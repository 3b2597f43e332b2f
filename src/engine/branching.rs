//! Branching in progress: the parallel branches of a node, which are recorded already and
//! where their records go. Kept in the checkpoint until the branches join; they are run by
//! `branches`. (A new run from another run's step is a different thing: `runs::fork`.)

use super::NodeId;
use serde::{Deserialize, Serialize};

/// Branches in progress, kept in the checkpoint until they join.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Branching<N> {
    /// The branches, in record order.
    pub(super) branches: Vec<N>,
    /// The branches recorded so far, in the order they finished.
    pub(super) done: Vec<N>,
    /// Where the branches' records start among the checkpoint's records.
    pub(super) first_record: usize,
}

impl<N: NodeId> Branching<N> {
    /// The branches not recorded yet, in declared order.
    pub(super) fn pending(&self) -> Vec<N> {
        let done = |b: &N| self.done.contains(b);
        self.branches.iter().copied().filter(|b| !done(b)).collect()
    }

    fn rank(&self, branch: N) -> usize {
        let position = self.branches.iter().position(|b| *b == branch);
        position.unwrap_or(self.branches.len())
    }

    /// Where the record of `branch` goes: after the records of the branches declared
    /// before it that are recorded already.
    pub(super) fn slot(&self, branch: N) -> usize {
        let rank = self.rank(branch);
        let before = self.done.iter().filter(|d| self.rank(**d) < rank).count();
        self.first_record + before
    }

    pub(super) fn complete(&self) -> bool {
        self.done.len() >= self.branches.len()
    }

    /// How many of the checkpoint's records no pending branch can be recorded before: the
    /// records before the branches', then those of the branches declared first that all finished.
    pub(super) fn settled(&self) -> usize {
        let finished = self.branches.iter().take_while(|b| self.done.contains(b));
        self.first_record + finished.count()
    }
}
