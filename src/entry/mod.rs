//! Entry points: the CLI and the Lambda handlers. They parse input, call the
//! [`crate::rag::Workflow`] service and shape its answer; they hold no workflow logic.

mod app;
pub mod cli;
mod cli_kb;
mod cli_stream;
pub mod eval;
pub mod http;
pub mod logging;
pub mod metrics;
pub mod sqs;
pub mod stream;

pub use app::{App, StartupError};
