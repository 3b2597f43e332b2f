//! What shaped a run's answer, as `metadata.limits_hit[]` names it: an engine limit or a
//! workflow bound. A closed enum, so every place that reports limits (the response, the
//! metrics) is made to handle a new one.

use super::BestEffortReason;
use crate::engine::Limit;
use serde::{Deserialize, Serialize};

/// One entry of `metadata.limits_hit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitHit {
    /// `WORKFLOW_RECURSION_LIMIT` steps were taken.
    StepLimit,
    /// The deadline budget could not cover the next node.
    Deadline,
    /// The run's token budget could not cover the next node.
    TokenBudget,
    /// The answer was still not useful after `MAX_RETRIES` query rewrites (the wire name
    /// is the variable's, a contract).
    #[serde(rename = "max_retries")]
    MaxQueryRewrites,
    /// The answer was still not grounded after `MAX_REGENERATIONS` regenerations.
    MaxRegenerations,
    /// Neither the knowledge base nor web search gave anything to answer from.
    NoSources,
    /// The answer reached its output cap (`LLM_MAX_ANSWER_TOKENS`) and was kept as it was.
    AnswerLength,
    /// The model could not answer (time-outs or server errors after their retries, unusable
    /// replies); the answer was quoted from the documents found.
    ModelUnavailable,
    /// The model's answers stayed under the floor every answer must pass (an echo of the
    /// prompt, no content, a loop, a missing citation, nothing shared with the documents); the
    /// answer was quoted from the documents found.
    ModelUnusable,
    /// The run waited for a person longer than `INTERRUPT_TIMEOUT_SECONDS`.
    InterruptTimeout,
}

impl LimitHit {
    /// Every limit, in the order metrics list them.
    pub(crate) const ALL: [LimitHit; 10] = [
        LimitHit::StepLimit,
        LimitHit::Deadline,
        LimitHit::TokenBudget,
        LimitHit::MaxQueryRewrites,
        LimitHit::MaxRegenerations,
        LimitHit::NoSources,
        LimitHit::AnswerLength,
        LimitHit::ModelUnavailable,
        LimitHit::ModelUnusable,
        LimitHit::InterruptTimeout,
    ];

    /// Wire name (`limits_hit[]`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            LimitHit::StepLimit => Limit::StepLimit.as_str(),
            LimitHit::Deadline => Limit::Deadline.as_str(),
            LimitHit::TokenBudget => Limit::TokenBudget.as_str(),
            LimitHit::InterruptTimeout => Limit::InterruptTimeout.as_str(),
            LimitHit::MaxQueryRewrites => "max_retries",
            LimitHit::MaxRegenerations => "max_regenerations",
            LimitHit::NoSources => "no_sources",
            LimitHit::AnswerLength => "answer_length",
            LimitHit::ModelUnavailable => "model_unavailable",
            LimitHit::ModelUnusable => "model_unusable",
        }
    }
}

impl From<Limit> for LimitHit {
    fn from(limit: Limit) -> Self {
        match limit {
            Limit::StepLimit => LimitHit::StepLimit,
            Limit::Deadline => LimitHit::Deadline,
            Limit::TokenBudget => LimitHit::TokenBudget,
            Limit::InterruptTimeout => LimitHit::InterruptTimeout,
        }
    }
}

impl From<BestEffortReason> for LimitHit {
    fn from(reason: BestEffortReason) -> Self {
        match reason {
            BestEffortReason::MaxRegenerations => LimitHit::MaxRegenerations,
            BestEffortReason::MaxQueryRewrites => LimitHit::MaxQueryRewrites,
            BestEffortReason::NoSources => LimitHit::NoSources,
            BestEffortReason::AnswerLength => LimitHit::AnswerLength,
            BestEffortReason::ModelUnavailable => LimitHit::ModelUnavailable,
            BestEffortReason::ModelUnusable => LimitHit::ModelUnusable,
            BestEffortReason::Limit(limit) => limit.into(),
        }
    }
}

impl std::fmt::Display for LimitHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Compares with a wire name, as callers reading a response do.
impl PartialEq<str> for LimitHit {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

/// Compares with a wire name, as callers reading a response do.
impl PartialEq<&str> for LimitHit {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_are_the_serialised_ones() {
        for limit in LimitHit::ALL {
            assert_eq!(
                serde_json::to_value(limit).unwrap(),
                serde_json::Value::from(limit.as_str())
            );
            let back: LimitHit = serde_json::from_value(limit.as_str().into()).unwrap();
            assert_eq!(back, limit);
        }
    }
}
