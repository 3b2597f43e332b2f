//! Why a thread operation did not happen.

use crate::engine::EngineError;
use crate::store::StoreError;

/// Why a thread operation did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ThreadError {
    /// The thread's previous turn is unfinished.
    #[error("thread {thread_id} is busy with run {run_id}")]
    Busy {
        /// The thread.
        thread_id: String,
        /// The unfinished turn's run.
        run_id: String,
        /// When to try again (epoch ms).
        retry_at_ms: u64,
    },
    /// No such thread of this caller (never created, expired or deleted).
    #[error("thread {thread_id} not found")]
    NotFound {
        /// The thread.
        thread_id: String,
    },
    /// This checkpoint store keeps no threads.
    #[error("the checkpoint store ({store}) keeps no threads")]
    Unsupported {
        /// The store's name.
        store: &'static str,
    },
    /// Reading or writing the store failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl From<StoreError> for ThreadError {
    fn from(e: StoreError) -> Self {
        ThreadError::Engine(EngineError::Store(e))
    }
}
