//! Entry points: the CLI, the Lambda handlers and the sweeper. They parse input, call the
//! [`crate::rag::Workflow`] service and shape its answer; they hold no workflow logic.

pub mod adapters;
mod app;
pub mod caller;
pub mod cli;
pub mod http;
pub mod logging;
pub mod messages;
pub(crate) mod metrics;
pub mod sqs;
mod sse;
pub mod stream;
mod stream_resume;
pub mod sweeper;

pub use app::{work_queue, App, StartupError};
