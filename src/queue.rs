//! The work queue for asynchronous runs and continuations: the [`WorkQueue`] trait, the SQS
//! implementation and an in-memory one for tests.

use crate::error::{Classify, ErrorClass};
use crate::rag::RunRequest;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use tracing::Instrument;

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

/// Amazon SQS (the SDK's standard retries are the infrastructure retry layer).
#[derive(Debug, Clone)]
pub struct SqsQueue {
    client: aws_sdk_sqs::Client,
    url: String,
}

impl SqsQueue {
    /// A queue at `url`, through a client built once.
    pub fn new(client: aws_sdk_sqs::Client, url: impl Into<String>) -> Self {
        Self {
            client,
            url: url.into(),
        }
    }
}

#[async_trait]
impl WorkQueue for SqsQueue {
    async fn send(&self, message: &WorkMessage) -> Result<(), QueueError> {
        let body =
            serde_json::to_string(message).map_err(|e| QueueError::Permanent(e.to_string()))?;
        // The sender's trace goes with the message, so the run it continues stays one trace.
        let trace = crate::otlp::current_traceparent().and_then(|tp| {
            aws_sdk_sqs::types::MessageAttributeValue::builder()
                .data_type("String")
                .string_value(tp)
                .build()
                .ok()
        });
        self.client
            .send_message()
            .queue_url(&self.url)
            .message_body(body)
            .set_message_attributes(
                trace.map(|t| [(crate::otlp::TRACEPARENT.to_owned(), t)].into()),
            )
            .send()
            .instrument(
                tracing::info_span!(target: crate::spans::TARGET, "sqs", operation = "SendMessage"),
            )
            .await
            .map_err(|e| {
                // Classified like every AWS error: throttling codes (`RequestThrottled`,
                // `ThrottlingException`, ...), 429, 5xx, timeouts and connection errors are
                // transient.
                let text = aws_sdk_sqs::error::DisplayErrorContext(&e).to_string();
                match crate::aws::sdk_error_class(&e) {
                    ErrorClass::Transient => QueueError::Transient(text),
                    ErrorClass::Permanent => QueueError::Permanent(text),
                }
            })?;
        Ok(())
    }
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
