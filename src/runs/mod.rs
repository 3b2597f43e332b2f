//! A run's life cycle (placeholder doc, rewritten below).

pub(crate) mod active;
mod cancel;
mod finished;
mod history;
pub(crate) mod idempotency;
mod listing;
mod observed;
mod queue;
mod replay;
mod service;
mod sweep;
pub mod thread;
mod workflow;

pub use cancel::Cancel;
pub use finished::{CompletionEvents, EventSink, Notified, NotifyError, SinkError};
pub use history::{StepEntry, StepPage, MAX_STEPS_PER_PAGE};
pub(crate) use listing::runs_owner;
pub use listing::{parse_status, RunIndexer, RunSummary};
pub use queue::{MemoryQueue, QueueError, WorkMessage, WorkQueue};
pub use replay::steps_after;
pub use service::Runs;
pub use sweep::{sweep, SweepReport};
pub use workflow::{Workflow, QUEUED_LEASE};
