//! Errors of checkpoint stores, classified once.
use crate::error::{Classify, ErrorClass};

/// A failed store operation.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The stored version is not the one the writer read: another writer got there first.
    #[error("version conflict on {key}: expected {expected}")]
    Conflict {
        /// Item key.
        key: String,
        /// Version the writer expected.
        expected: u64,
    },
}

impl Classify for StoreError {
    fn class(&self) -> ErrorClass {
        ErrorClass::Permanent
    }
}
