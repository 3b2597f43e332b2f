//! The limits that stop a run, by their wire names (`limits_hit[]`).

use serde::{Deserialize, Serialize};

/// Which limit stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// `WORKFLOW_RECURSION_LIMIT` steps were taken.
    StepLimit,
    /// The deadline budget could not cover the next node.
    Deadline,
    /// The run's token budget could not cover the next node.
    TokenBudget,
    /// A run waiting for a person ([`super::Transition::Wait`]) was not answered in time.
    InterruptTimeout,
}

impl Limit {
    /// Wire name (`limits_hit[]`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Limit::StepLimit => "step_limit",
            Limit::Deadline => "deadline",
            Limit::TokenBudget => "token_budget",
            Limit::InterruptTimeout => "interrupt_timeout",
        }
    }
}
