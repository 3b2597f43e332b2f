//! Errors of checkpoint stores, classified once.
use crate::error::{Classify, ErrorClass};

/// A failed store operation.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The stored version is not the one the writer read: another writer got there first.
    /// Permanent for this writer: it must stop, never retry.
    #[error("version conflict on {key}: expected version {expected}")]
    Conflict {
        /// Item key.
        key: String,
        /// Version the writer expected.
        expected: u64,
    },
    /// The body can never be stored (over the backend's hard limit even after compression
    /// and splitting).
    #[error("item {key} is too large: {bytes} bytes (limit {limit})")]
    TooLarge {
        /// Item key.
        key: String,
        /// Size after compression.
        bytes: usize,
        /// Backend limit.
        limit: usize,
    },
    /// Throttling, timeouts, connection errors, 5xx: worth retrying.
    #[error("store temporarily unavailable: {0}")]
    Transient(String),
    /// Anything else (access denied, missing table, validation, corrupt item).
    #[error("store error: {0}")]
    Permanent(String),
}

impl Classify for StoreError {
    fn class(&self) -> ErrorClass {
        match self {
            StoreError::Transient(_) => ErrorClass::Transient,
            StoreError::Conflict { .. }
            | StoreError::TooLarge { .. }
            | StoreError::Permanent(_) => ErrorClass::Permanent,
        }
    }
}
