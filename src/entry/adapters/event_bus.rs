//! `Run Finished` events on Amazon EventBridge: the [`EventSink`] of the bus named by
//! `EVENT_BUS_NAME`. What an event holds, and when it is sent, is the run life cycle's
//! (`runs/finished.rs`).

use crate::error::ErrorClass;
use crate::runs::{EventSink, SinkError};
use async_trait::async_trait;
use serde_json::Value;

/// The events' `source`.
pub(crate) const SOURCE: &str = "bounded-rag";
/// The events' `detail-type`.
pub(crate) const DETAIL_TYPE: &str = "Run Finished";

/// An EventBridge bus.
pub(crate) struct EventBridgeSink {
    client: aws_sdk_eventbridge::Client,
    bus: String,
}

impl EventBridgeSink {
    /// The bus `bus` (a name or an ARN) through `client`.
    pub(crate) fn new(client: aws_sdk_eventbridge::Client, bus: String) -> Self {
        Self { client, bus }
    }
}

#[async_trait]
impl EventSink for EventBridgeSink {
    async fn put(&self, detail: &Value) -> Result<(), SinkError> {
        let entry = aws_sdk_eventbridge::types::PutEventsRequestEntry::builder()
            .event_bus_name(&self.bus)
            .source(SOURCE)
            .detail_type(DETAIL_TYPE)
            .detail(detail.to_string())
            .build();
        let out = self
            .client
            .put_events()
            .entries(entry)
            .send()
            .await
            .map_err(|e| {
                let message = format!(
                    "PutEvents on {}: {}",
                    self.bus,
                    aws_sdk_eventbridge::error::DisplayErrorContext(&e)
                );
                match crate::aws::sdk_error_class(&e) {
                    ErrorClass::Transient => SinkError::Transient(message),
                    ErrorClass::Permanent => SinkError::Permanent(message),
                }
            })?;
        // A request can succeed with its one entry refused.
        match out.entries().first().and_then(|e| e.error_code()) {
            None if out.failed_entry_count() == 0 => Ok(()),
            code => {
                let code = code.unwrap_or("unknown").to_owned();
                let message = format!("PutEvents on {}: entry refused ({code})", self.bus);
                if code.contains("Throttl") || code.contains("InternalFailure") {
                    Err(SinkError::Transient(message))
                } else {
                    Err(SinkError::Permanent(message))
                }
            }
        }
    }
}
