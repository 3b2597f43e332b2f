//! The work queue for asynchronous runs and continuations, as the run life cycle sees it: the
//! message ([`WorkMessage`]), the [`WorkQueue`] trait and an in-memory queue for tests. The SQS
//! client is an AWS adapter at the edge (`entry/adapters/sqs_queue.rs`).

use crate::error::{Classify, ErrorClass};
use crate::rag::RunRequest;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// An SQS message body: a new run carries its request, a continuation only the run id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkMessage {
    /// The run to start or continue.
    pub run_id: String,
    /// Present for a new run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<RunRequest>,
}

impl WorkMessage {
    /// A continuation of `run_id`.
    pub fn continuation(run_id: &str) -> Self {
        Self {
            run_id: run_id.to_owned(),
            request: None,
        }
    }
}

/// A failed send.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// Throttling, timeouts, 5xx: worth retrying.
    #[error("queue temporarily unavailable: {0}")]
    Transient(String),
    /// Access denied, missing queue, bad message.
    #[error("queue error: {0}")]
    Permanent(String),
}

impl Classify for QueueError {
    fn class(&self) -> ErrorClass {
        match self {
            QueueError::Transient(_) => ErrorClass::Transient,
            QueueError::Permanent(_) => ErrorClass::Permanent,
        }
    }
}

/// Sends work messages.
#[async_trait]
pub trait WorkQueue: Send + Sync {
    /// Queues `message`.
    async fn send(&self, message: &WorkMessage) -> Result<(), QueueError>;
}

/// Records messages in memory.
#[derive(Debug, Default)]
pub struct MemoryQueue {
    sent: Mutex<Vec<WorkMessage>>,
}

impl MemoryQueue {
    /// Messages sent so far.
    pub fn sent(&self) -> Vec<WorkMessage> {
        self.sent.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl WorkQueue for MemoryQueue {
    async fn send(&self, message: &WorkMessage) -> Result<(), QueueError> {
        self.sent
            .lock()
            .map_err(|_| QueueError::Permanent("lock poisoned".into()))?
            .push(message.clone());
        Ok(())
    }
}
