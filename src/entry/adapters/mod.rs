//! The AWS adapters at the edge, behind small traits: the one SQS sender (the work
//! queue, [`crate::runs::WorkQueue`], and the sync function's queue), and the one EventBridge sender
//! of `Run Finished` and `Sync Finished` events ([`crate::events::EventSink`]). `App` and the
//! sync function build them once from the settings.

mod event_bus;
mod sqs_queue;

pub(crate) use event_bus::EventBridgeSink;
pub use sqs_queue::SqsQueue;
