//! What speculation keeps in the run's state: the fork's findings until it joins (`Speculating`)
//! and the run's speculation counters; the rule that uses them is in `speculation.rs`.

use super::quoted::Quoted;
use crate::llm::DataSource;
use serde::{Deserialize, Serialize};

/// The run's speculation counters (metadata `speculation`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SpeculationStats {
    /// Speculative answers started.
    pub started: u32,
    /// Speculative answers that became the answer.
    pub used: u32,
    /// Speculative answers discarded.
    pub discarded: u32,
    /// Tokens of speculative calls whose result went unused.
    pub wasted_tokens: u64,
}

/// The verdicts of the speculative grading, one per passage, in order, as the model gave them
/// (the join overrules them when the model is doubted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grades {
    pub(super) keep: Vec<bool>,
    pub(super) tokens: u64,
}

/// The speculative answer, waiting for the join.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeculativeAnswer {
    pub(crate) answer: String,
    /// The answer was cut at its output cap (`answer_length`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) cut: bool,
    /// The model could not answer (`model_unavailable`) or its answers stayed under the floor
    /// (`model_unusable`): the answer is quoted from the documents.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "quoted_compat"
    )]
    pub(super) quoted: Option<Quoted>,
    /// An attempt of it was under the floor (the model shows itself unreliable, unless
    /// `from_memory`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) under_floor: bool,
    /// Every attempt of it under the floor was written from memory: it said what its passages
    /// do not hold ([`super::floor::Unusable::is_from_memory`]), nothing broken.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) from_memory: bool,
    /// The passages a search with the answer's words found to support it, when the
    /// passages it was written from did not: its sources if it is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) researched: Option<Vec<crate::knowledge::Document>>,
    pub(super) attempt: u32,
    pub(super) tokens: u64,
}

/// What the branches of a fork found, until it joins, and the run's counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Speculating {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) grades: Option<Grades>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) answer: Option<SpeculativeAnswer>,
    #[serde(default)]
    pub(crate) stats: SpeculationStats,
}

impl Speculating {
    /// True when nothing speculative happened (kept out of the checkpoint).
    pub(crate) fn is_empty(&self) -> bool {
        *self == Speculating::default()
    }
}

/// A finished branch's result.
#[derive(Debug)]
pub enum RagMerge {
    /// The route chosen.
    Route(DataSource),
    /// The grading.
    Grades(Grades),
    /// The speculative answer.
    Answer(SpeculativeAnswer),
}

/// Reads `quoted` as written now (`"unavailable"`, `"unusable"`) and as checkpoints written
/// before the floor did (`true`: the model was unavailable).
fn quoted_compat<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Quoted>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Flag(bool),
        Why(Quoted),
    }
    Ok(match Option::<Either>::deserialize(d)? {
        Some(Either::Flag(true)) => Some(Quoted::Unavailable),
        Some(Either::Flag(false)) | None => None,
        Some(Either::Why(why)) => Some(why),
    })
}
