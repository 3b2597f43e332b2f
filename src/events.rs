//! The event seam every finished thing goes through: [`EventSink`] (on AWS, the EventBridge
//! bus named by `EVENT_BUS_NAME`: `entry/adapters/event_bus.rs`), with the kinds of event
//! ([`EventKind`]: a run's `Run Finished` and `Run Waiting`, a sync's `Sync Finished`) and the one
//! classification of a failed put ([`SinkError`]). What an event holds, and when it is sent,
//! is its sender's: `runs/finished.rs` and the sync job's publish.

use crate::error::{Classify, ErrorClass};
use async_trait::async_trait;
use serde_json::Value;

/// The events' `source`.
pub const SOURCE: &str = "bounded-rag";

/// What an event tells; one sink carries one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A run reached a final status.
    RunFinished,
    /// A run waits for a person (`clarify` or `approve`).
    RunWaiting,
    /// A sync published (or found nothing to publish).
    SyncFinished,
}

impl EventKind {
    /// The event's `detail-type`.
    pub fn detail_type(self) -> &'static str {
        match self {
            Self::RunFinished => "Run Finished",
            Self::RunWaiting => "Run Waiting",
            Self::SyncFinished => "Sync Finished",
        }
    }
}

/// A failed put of an event, classified once.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// Throttling, timeouts, 5xx: a later attempt may succeed.
    #[error("event bus temporarily unavailable: {0}")]
    Transient(String),
    /// Refused (no such bus, access denied).
    #[error("event bus refused the event: {0}")]
    Permanent(String),
}

impl Classify for SinkError {
    fn class(&self) -> ErrorClass {
        match self {
            SinkError::Transient(_) => ErrorClass::Transient,
            SinkError::Permanent(_) => ErrorClass::Permanent,
        }
    }
}

/// Where events of one kind go.
#[async_trait]
pub trait EventSink: Send + Sync {
    /// Puts one event with `detail` (a JSON object).
    async fn put(&self, detail: &Value) -> Result<(), SinkError>;
}
