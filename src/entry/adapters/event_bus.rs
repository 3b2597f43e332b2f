//! Events on Amazon EventBridge: the one [`EventSink`] of the bus named by `EVENT_BUS_NAME`,
//! for `Run Finished` (the run life cycle's, `runs/finished.rs`) and `Sync Finished` (the sync
//! job's) alike.

use crate::error::ErrorClass;
use crate::events::{EventKind, EventSink, SinkError, SOURCE};
use async_trait::async_trait;
use serde_json::Value;

/// An EventBridge bus, carrying one kind of event.
pub(crate) struct EventBridgeSink {
    client: aws_sdk_eventbridge::Client,
    bus: String,
    kind: EventKind,
}

impl EventBridgeSink {
    /// The bus `bus` (a name or an ARN) through `client`, for events of `kind`.
    pub(crate) fn new(client: aws_sdk_eventbridge::Client, bus: String, kind: EventKind) -> Self {
        Self { client, bus, kind }
    }
}

#[async_trait]
impl EventSink for EventBridgeSink {
    async fn put(&self, detail: &Value) -> Result<(), SinkError> {
        let entry = aws_sdk_eventbridge::types::PutEventsRequestEntry::builder()
            .event_bus_name(&self.bus)
            .source(SOURCE)
            .detail_type(self.kind.detail_type())
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
