//! Errors of the engine itself (not of nodes: a node failure is recorded in the checkpoint).

use crate::error::{Classify, ErrorClass};
use crate::store::StoreError;

/// Why the engine could not load, lock or save a run.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// No checkpoint under this run id (never created, or expired).
    #[error("run {run_id} not found")]
    NotFound {
        /// Run id.
        run_id: String,
    },
    /// A run with this id already exists.
    #[error("run {run_id} already exists")]
    Exists {
        /// Run id.
        run_id: String,
    },
    /// Another invocation holds the run's lease.
    #[error(
        "run {run_id} is being advanced by another invocation until {}; retry after that",
        crate::clock::utc_seconds(*.until_ms)
    )]
    Busy {
        /// Run id.
        run_id: String,
        /// When the other lease lapses (Unix epoch ms).
        until_ms: u64,
    },
    /// Another invocation wrote the run after this one read it: this one must stop.
    #[error("run {run_id} was advanced by another invocation; this invocation stopped")]
    Lost {
        /// Run id.
        run_id: String,
    },
    /// The stored checkpoint cannot be read back.
    #[error("checkpoint of run {run_id} is unreadable: {message}")]
    Corrupt {
        /// Run id.
        run_id: String,
        /// Decoder message.
        message: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(StoreError),
}

impl Classify for EngineError {
    fn class(&self) -> ErrorClass {
        match self {
            EngineError::Busy { .. } => ErrorClass::Transient,
            EngineError::Store(e) => e.class(),
            EngineError::NotFound { .. }
            | EngineError::Exists { .. }
            | EngineError::Lost { .. }
            | EngineError::Corrupt { .. } => ErrorClass::Permanent,
        }
    }
}
