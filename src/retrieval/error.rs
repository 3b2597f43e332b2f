//! Errors of knowledge-base and web-search access, classified once.
use crate::error::{Classify, ErrorClass};

/// A failed retrieval.
#[derive(Debug, thiserror::Error)]
pub enum RetrievalError {
    /// Placeholder until the implementation lands.
    #[error("not implemented: {0}")]
    Unimplemented(&'static str),
}

impl Classify for RetrievalError {
    fn class(&self) -> ErrorClass {
        ErrorClass::Permanent
    }
}
