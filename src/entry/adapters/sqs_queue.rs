//! The work queue on Amazon SQS: the [`WorkQueue`] the functions send new asynchronous runs
//! and continuations through (`WORK_QUEUE_URL`).

use crate::error::ErrorClass;
use crate::runs::{QueueError, WorkMessage, WorkQueue};
use async_trait::async_trait;
use tracing::Instrument;

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
