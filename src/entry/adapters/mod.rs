//! The AWS adapters at the edge, behind the small traits the run life cycle owns: the SQS work
//! queue ([`crate::runs::WorkQueue`]) and the EventBridge bus of completion events
//! ([`crate::runs::EventSink`]); and the sync function's queue and `Sync Finished` events. `App` builds them once from the settings.

mod event_bus;
mod sqs_queue;
mod sync_adapters;

pub(crate) use event_bus::EventBridgeSink;
pub use sqs_queue::SqsQueue;
pub(crate) use sync_adapters::{EventBridgeSyncEvents, SqsSyncQueue};
