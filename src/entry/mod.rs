//! Entry points: the CLI, the Lambda handlers (HTTP API, stream function, SQS worker, sweeper)
//! and the AWS adapters they are given. They parse input (HTTP requests, SSE, SQS records, CLI
//! arguments), make one call per need to the run life cycle ([`crate::runs::Runs`]) and map its
//! typed answers and refusals to status codes, server-sent events, batch item failures and exit
//! codes; they hold no workflow or run logic.
//!
//! | module | owns |
//! |---|---|
//! | `app.rs` | [`App`]: every client built once from the settings |
//! | `startup_error.rs` | [`StartupError`]: why the application could not start, with what to check |
//! | `api/` | the HTTP API handler (incoming requests; routing, input, the one refusal-to-status mapping) |
//! | `as_is.rs` | [`AsIs`]: the HTTP function's responses passed to the runtime as built (no charset re-decoding) |
//! | `stream_function.rs`, `stream_resume.rs`, `sse.rs` | the stream function: a run as server-sent events, a resumed stream, SSE framing |
//! | `sqs.rs` | the SQS worker: records to runs, outcomes to batch item failures |
//! | `sweeper.rs` | the sweeper function: its clients and its scheduled event |
//! | `sync_function.rs` | the sync function: its clients, S3 notifications and its own messages to the sync job, outcomes to batch item failures |
//! | `cli/` | the `bounded-rag` command line |
//! | `serve/` | `bounded-rag serve`: the handlers behind a local HTTP server, an in-process work queue, the playground page |
//! | `adapters/` | the AWS adapters: SQS work queue, EventBridge completion events, the sync function's queue and events |
//! | `caller.rs`, `messages.rs`, `metrics.rs`, `logging.rs` | who asks, caller-facing texts, EMF lines, log set-up |

pub mod adapters;
pub mod api;
mod app;
mod as_is;
pub(crate) mod caller;
pub mod cli;
pub mod logging;
pub(crate) mod messages;
pub(crate) mod metrics;
mod serve;
pub mod sqs;
mod sse;
mod startup_error;
pub mod stream_function;
mod stream_resume;
pub mod sweeper;
pub mod sync_function;

pub use app::{work_queue, App, StartupError};
pub use as_is::AsIs;
