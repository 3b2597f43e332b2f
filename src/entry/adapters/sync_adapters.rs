//! The sync function's queue and event bus: its own messages on SQS (`SYNC_QUEUE_URL`,
//! delayed by the debounce), `Sync Finished` events on EventBridge (`EVENT_BUS_NAME`).
use crate::error::ErrorClass;
use crate::ingest::sync::job::{JobError, SyncEvents, SyncQueue};
use async_trait::async_trait;
use std::time::Duration;

/// The events' `detail-type`.
pub(crate) const SYNC_FINISHED: &str = "Sync Finished";

/// The sync queue on SQS.
#[derive(Debug, Clone)]
pub(crate) struct SqsSyncQueue {
    client: aws_sdk_sqs::Client,
    url: String,
}

impl SqsSyncQueue {
    /// The queue at `url`.
    pub(crate) fn new(client: aws_sdk_sqs::Client, url: impl Into<String>) -> Self {
        Self {
            client,
            url: url.into(),
        }
    }
}

fn classify<E, R>(
    what: &str,
    e: &aws_smithy_runtime_api::client::result::SdkError<E, R>,
) -> JobError
where
    E: aws_sdk_sqs::error::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let message = format!("{what}: {}", crate::outbound::error_chain(e));
    let throttled = e
        .as_service_error()
        .and_then(|s| s.code())
        .is_some_and(|c| c.contains("Throttl") || c.contains("InternalError"));
    let lost = matches!(
        e,
        aws_smithy_runtime_api::client::result::SdkError::TimeoutError(_)
            | aws_smithy_runtime_api::client::result::SdkError::DispatchFailure(_)
            | aws_smithy_runtime_api::client::result::SdkError::ResponseError(_)
    );
    match throttled || lost {
        true => JobError::Transient(message),
        false => JobError::Permanent(message),
    }
}

#[async_trait]
impl SyncQueue for SqsSyncQueue {
    async fn send(&self, body: String, delay: Duration) -> Result<(), JobError> {
        // SQS delays a message by at most 15 minutes.
        let delay = delay.as_secs().min(900) as i32;
        self.client
            .send_message()
            .queue_url(&self.url)
            .message_body(body)
            .delay_seconds(delay)
            .send()
            .await
            .map(drop)
            .map_err(|e| classify("SendMessage", &e))
    }

    /// `SendMessageBatch`, ten at a time, eight batches in flight.
    async fn send_all(&self, bodies: Vec<String>) -> Result<(), JobError> {
        use futures::StreamExt;
        let batches: Vec<Vec<String>> = bodies.chunks(10).map(<[String]>::to_vec).collect();
        let mut sends = futures::stream::iter(batches)
            .map(|batch| self.send_batch(batch))
            .buffer_unordered(8);
        while let Some(sent) = sends.next().await {
            sent?;
        }
        Ok(())
    }
}

impl SqsSyncQueue {
    async fn send_batch(&self, batch: Vec<String>) -> Result<(), JobError> {
        let entries: Vec<_> = batch
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
            .map_err(|e| classify("SendMessageBatch", &e))?;
        match out.failed().first() {
            None => Ok(()),
            Some(f) => Err(JobError::Transient(format!(
                "SendMessageBatch: entry {} refused ({})",
                f.id(),
                f.code()
            ))),
        }
    }
}

/// `Sync Finished` events on an EventBridge bus.
pub(crate) struct EventBridgeSyncEvents {
    client: aws_sdk_eventbridge::Client,
    bus: String,
}

impl EventBridgeSyncEvents {
    /// The bus `bus` (a name or an ARN).
    pub(crate) fn new(client: aws_sdk_eventbridge::Client, bus: impl Into<String>) -> Self {
        Self {
            client,
            bus: bus.into(),
        }
    }
}

#[async_trait]
impl SyncEvents for EventBridgeSyncEvents {
    async fn finished(&self, detail: &serde_json::Value) -> Result<(), JobError> {
        let entry = aws_sdk_eventbridge::types::PutEventsRequestEntry::builder()
            .event_bus_name(&self.bus)
            .source(super::event_bus::SOURCE)
            .detail_type(SYNC_FINISHED)
            .detail(detail.to_string())
            .build();
        let out = self
            .client
            .put_events()
            .entries(entry)
            .send()
            .await
            .map_err(|e| match crate::aws::sdk_error_class(&e) {
                ErrorClass::Transient => JobError::Transient(format!("PutEvents: {e}")),
                ErrorClass::Permanent => JobError::Permanent(format!("PutEvents: {e}")),
            })?;
        match out.failed_entry_count() {
            0 => Ok(()),
            _ => Err(JobError::Transient(format!(
                "PutEvents on {}: entry refused",
                self.bus
            ))),
        }
    }
}
