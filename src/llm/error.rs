//! Errors of model calls, classified once.
use crate::error::{Classify, ErrorClass};

/// A failed model call.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// Placeholder until the provider lands.
    #[error("not implemented: {0}")]
    Unimplemented(&'static str),
}

impl Classify for LlmError {
    fn class(&self) -> ErrorClass {
        ErrorClass::Permanent
    }
}
