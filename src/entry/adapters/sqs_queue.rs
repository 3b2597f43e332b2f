//! Amazon SQS, the one queue sender: the [`WorkQueue`] the functions send new asynchronous runs
//! and continuations through (`WORK_QUEUE_URL`), and the [`SyncQueue`] of the sync function's
//! own messages (`SYNC_QUEUE_URL`: the debounced publish, a full sync's fan-out). Failures are
//! classified once, as every AWS error is (`aws::sdk_error_class`).

use crate::error::ErrorClass;
use crate::ingest::{JobError, SyncQueue};
use crate::runs::{QueueError, WorkMessage, WorkQueue};
use async_trait::async_trait;
use std::time::Duration;
use tracing::Instrument;

/// SQS delays a message by at most 15 minutes.
const MAX_DELAY: Duration = Duration::from_secs(900);
/// Entries of one `SendMessageBatch`.
const BATCH: usize = 10;
/// Batches in flight at once.
const BATCHES_IN_FLIGHT: usize = 8;

/// Amazon SQS (the SDK's standard retries are the infrastructure retry layer).
#[derive(Debug, Clone)]
pub struct SqsQueue {
    client: aws_sdk_sqs::Client,
    url: String,
}

/// A failed send: its class and what SQS said.
type Failed = (ErrorClass, String);

fn failed<E>(e: &aws_sdk_sqs::error::SdkError<E, aws_sdk_sqs::config::http::HttpResponse>) -> Failed
where
    E: aws_sdk_sqs::error::ProvideErrorMetadata + std::error::Error + 'static,
{
    // Throttling codes (`RequestThrottled`, `ThrottlingException`, ...), 429, 5xx, timeouts and
    // connection errors are transient.
    let text = aws_sdk_sqs::error::DisplayErrorContext(e).to_string();
    (crate::aws::sdk_error_class(e), text)
}

impl SqsQueue {
    /// A queue at `url`, through a client built once.
    pub fn new(client: aws_sdk_sqs::Client, url: impl Into<String>) -> Self {
        Self {
            client,
            url: url.into(),
        }
    }

    /// Sends `body`, visible after `delay` (none: the queue's own delay), with the sender's
    /// trace, so the work it asks for stays one trace.
    async fn send_body(&self, body: String, delay: Option<Duration>) -> Result<(), Failed> {
        let trace = crate::otlp::current_traceparent().and_then(|tp| {
            aws_sdk_sqs::types::MessageAttributeValue::builder()
                .data_type("String")
                .string_value(tp)
                .build()
                .ok()
        });
        let delay = delay.map(|d| i32::try_from(d.min(MAX_DELAY).as_secs()).unwrap_or(0));
        self.client
            .send_message()
            .queue_url(&self.url)
            .message_body(body)
            .set_delay_seconds(delay)
            .set_message_attributes(
                trace.map(|t| [(crate::otlp::TRACEPARENT.to_owned(), t)].into()),
            )
            .send()
            .instrument(
                tracing::info_span!(target: crate::spans::TARGET, "sqs", operation = "SendMessage"),
            )
            .await
            .map(drop)
            .map_err(|e| failed(&e))
    }

    /// Sends `bodies` in one `SendMessageBatch` (at most ten).
    async fn send_batch(&self, bodies: Vec<String>) -> Result<(), Failed> {
        let entries: Vec<_> = bodies
            .into_iter()
            .enumerate()
            .filter_map(|(i, body)| {
                aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .message_body(body)
                    .build()
                    .ok()
            })
            .collect();
        let out = self
            .client
            .send_message_batch()
            .queue_url(&self.url)
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(|e| failed(&e))?;
        match out.failed().first() {
            None => Ok(()),
            Some(f) => Err((
                ErrorClass::Transient,
                format!("SendMessageBatch: entry {} refused ({})", f.id(), f.code()),
            )),
        }
    }
}

#[async_trait]
impl WorkQueue for SqsQueue {
    async fn send(&self, message: &WorkMessage) -> Result<(), QueueError> {
        let body =
            serde_json::to_string(message).map_err(|e| QueueError::Permanent(e.to_string()))?;
        self.send_body(body, None)
            .await
            .map_err(|(class, text)| match class {
                ErrorClass::Transient => QueueError::Transient(text),
                ErrorClass::Permanent => QueueError::Permanent(text),
            })
    }
}

fn job_error((class, text): Failed) -> JobError {
    match class {
        ErrorClass::Transient => JobError::Transient(text),
        ErrorClass::Permanent => JobError::Permanent(text),
    }
}

#[async_trait]
impl SyncQueue for SqsQueue {
    async fn send(&self, body: String, delay: Duration) -> Result<(), JobError> {
        self.send_body(body, Some(delay)).await.map_err(job_error)
    }

    /// `SendMessageBatch`, ten at a time, eight batches in flight.
    async fn send_all(&self, bodies: Vec<String>) -> Result<(), JobError> {
        use futures::StreamExt;
        let batches: Vec<Vec<String>> = bodies.chunks(BATCH).map(<[String]>::to_vec).collect();
        let mut sends = futures::stream::iter(batches)
            .map(|batch| self.send_batch(batch))
            .buffer_unordered(BATCHES_IN_FLIGHT);
        while let Some(sent) = sends.next().await {
            sent.map_err(job_error)?;
        }
        Ok(())
    }
}
