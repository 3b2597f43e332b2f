//! What a run asked a person and was told, as its checkpoint keeps it: the question it waits
//! on ([`Interrupt`]), the clarification and consent decisions it got ([`Person`]), and the
//! keys of the answers it took. The gate and the answering are in `interrupt.rs`.

use crate::config::Gated;
use serde::{Deserialize, Serialize};

/// What a waiting run asks its person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Interrupt {
    /// The question needs a detail only the person has.
    Clarify {
        /// What to ask.
        question: String,
        /// Subjects the knowledge base has that the question may mean (may be empty).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        options: Vec<String>,
    },
    /// `step` runs only with the person's consent.
    Approve {
        /// The step waiting for consent.
        step: Gated,
        /// What it would do (for web search: the query it would send).
        what: String,
    },
}

impl Interrupt {
    /// Wire name of the kind (`clarify`, `approve`).
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Interrupt::Clarify { .. } => "clarify",
            Interrupt::Approve { .. } => "approve",
        }
    }
}

/// A person's answer to a waiting run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// The answer to a clarifying question.
    Answer(String),
    /// Consent given (`true`) or refused.
    Approve(bool),
}

/// A clarified question: what was asked, and what the person said it meant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Clarified {
    /// The question as first asked.
    pub(crate) original: String,
    /// The person's answer.
    pub(crate) answer: String,
}

/// A consent decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Consent {
    /// The gated step.
    pub(crate) step: Gated,
    /// Given or refused.
    pub(crate) approved: bool,
}

/// What the run asked a person and was told, in the checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Person {
    /// The question the run waits on, while it waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pending: Option<Interrupt>,
    /// The clarification, once answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) clarified: Option<Clarified>,
    /// Consent decisions, once made (one per gated step: a decision holds for the run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) consent: Vec<Consent>,
    /// The `Idempotency-Key`s of the answers the run took, kept in the same write as the
    /// answer, so a retried answer is recognised, never taken twice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) answered_with: Vec<KeyedAnswer>,
}

/// An answer's `Idempotency-Key` and body, as SHA-256 hex digests (never the key itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct KeyedAnswer {
    /// Digest of the key.
    pub(crate) key: String,
    /// Digest of the request body it came with.
    pub(crate) body: String,
}

impl Person {
    /// True when nothing was asked.
    pub(crate) fn is_empty(&self) -> bool {
        self == &Person::default()
    }

    /// The decision on `step`, once made.
    pub(crate) fn consent(&self, step: Gated) -> Option<bool> {
        self.consent
            .iter()
            .find(|c| c.step == step)
            .map(|c| c.approved)
    }
}
