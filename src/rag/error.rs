//! Errors of workflow steps: what the model or retrieval layers reported, classified there.

use crate::error::{Classify, ErrorClass};
use crate::llm::LlmError;
use crate::search::{RetrievalError, WebSearchError};
use std::time::Duration;

/// A failed workflow step.
#[derive(Debug, thiserror::Error)]
pub enum RagError {
    /// The model call failed.
    #[error("model call failed: {0}")]
    Llm(#[from] LlmError),
    /// The knowledge base failed.
    #[error("retrieval failed: {0}")]
    Retrieval(#[from] RetrievalError),
    /// The web search failed.
    #[error("retrieval failed: {0}")]
    WebSearch(#[from] WebSearchError),
}

impl Classify for RagError {
    fn class(&self) -> ErrorClass {
        match self {
            RagError::Llm(e) => e.class(),
            RagError::Retrieval(e) => e.class(),
            RagError::WebSearch(e) => e.class(),
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            RagError::Llm(e) => e.retry_after(),
            RagError::Retrieval(e) => e.retry_after(),
            RagError::WebSearch(e) => e.retry_after(),
        }
    }
}
