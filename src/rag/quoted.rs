//! Why a run's answer was quoted from its documents (the extractive answer) instead of written
//! by the model: kept in the state and in a speculative answer until the run ends.

use serde::{Deserialize, Serialize};

/// Why an answer was quoted from the documents instead of written by the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Quoted {
    /// The model could not answer (`model_unavailable`).
    Unavailable,
    /// The model's answers stayed under the floor (`model_unusable`).
    Unusable,
}
