//! A run's life cycle: admitting and starting runs, running, continuing and cancelling them,
//! their history and listing, their completion events, and the threads they are turns of. The
//! workflow itself (what a run does) is [`crate::rag`]'s; reading HTTP, SQS or CLI input and
//! shaping answers is [`crate::entry`]'s.
//!
//! [`Runs`] is the one service the entry points call, one call per need, each returning a
//! typed result or a typed [`Refusal`]:
//!
//! | call | need |
//! |---|---|
//! | `admit`, `run`, `start` (both) | a run request: rate window, request, `Idempotency-Key`, active-run slot, thread turn; then the run within a budget, with or without events |
//! | `submit` | an asynchronous run: admitted, stored and queued |
//! | `work`, `continue_run` | a work queue message (new asynchronous run or continuation); `ask --resume` |
//! | `poison` | a message that can never succeed: its run is marked `failed` |
//! | `status`, `steps`, `passages`, `list`, `cancel` | reading and stopping runs (`passages`: the playground's cited passages) |
//! | `fork` | a new run from a step of another, only the steps after it run |
//! | `answer` | a run that waits for a person answered (`POST /workflow/runs/{run_id}/resume`) |
//! | `export` | runs read back whole, by status, creation time and thread: the raw material of eval sets |
//! | `thread`, `thread_list`, `delete_thread` | reading and deleting threads |
//! | `budget` | an invocation's budget from its Lambda deadline |
//!
//! | file | owns |
//! |---|---|
//! | `service.rs` | [`Runs`]: the clients, admission limits and the budget rule |
//! | `start.rs` | admission, starting a run, asynchronous runs |
//! | `work.rs` | queue messages, continuing a run, poison messages |
//! | `ran.rs` | what a run answers, and `finish`: completion event, continuation |
//! | `control.rs` | status, steps, list, cancel; thread reads and delete |
//! | `export.rs` | a caller's runs read back whole, filtered (`runs export`) |
//! | `input.rs`, `refusal.rs` | a run request as read by an entry point; why a call is refused |
//! | `rate_limit.rs`, `active.rs`, `idempotency.rs` | the request rate window, active-run slots, `Idempotency-Key` |
//! | `workflow.rs`, `observed.rs` | [`Workflow`]: the run driver (create, resume, cancel, fail, read a run's checkpoint) and what its writes also do |
//! | `cancel.rs` | cancelling a run, and an invocation that finds its run cancelled |
//! | `fork.rs` | a new run forked from a step of another: the state that step left, rebuilt without running anything again |
//! | `history.rs`, `replay.rs`, `listing.rs` | a run's steps a page at a time, its `step` events rebuilt, the owner index of runs |
//! | `finished.rs` | completion events: at least once per finished run |
//! | `queue.rs` | [`WorkQueue`] and [`WorkMessage`] (the SQS client is at the edge: `entry/adapters`) |
//! | `sweep.rs` | re-queueing the runs whose lease lapsed |
//! | `resume.rs`, `waiting.rs` | answering a run that waits for a person: the answer and its key; the answer taken, a wait that ran out ended |
//! | `thread/` | conversation threads: turns started, recorded, read, deleted |

mod active;
mod cancel;
mod control;
mod export;
mod finished;
mod fork;
mod history;
mod idempotency;
mod input;
mod listing;
mod observed;
mod queue;
mod ran;
mod rate_limit;
mod refusal;
mod replay;
mod resume;
mod service;
mod start;
mod sweep;
mod thread;
mod waiting;
mod work;
mod workflow;

pub(crate) use cancel::Cancel;
pub(crate) use export::{ExportedRun, RunFilter};
pub use finished::CompletionEvents;
pub(crate) use fork::ForkInput;
pub(crate) use history::MAX_STEPS_PER_PAGE;
pub(crate) use input::RunInput;
pub(crate) use listing::parse_status;
pub use listing::RunIndexer;
pub use queue::{MemoryQueue, QueueError, WorkMessage, WorkQueue};
pub(crate) use ran::{Answer, Continuation, Ran};
pub(crate) use refusal::{ForkRefusal, Invalid, Refusal, ResumeRefusal};
pub(crate) use replay::steps_after;
pub(crate) use resume::{reply_from_json, ResumeInput};
pub use service::Runs;
pub(crate) use start::Submitted;
pub use sweep::{sweep, SweepReport};
pub(crate) use thread::{ThreadHead, TurnRecord};
pub use workflow::{Workflow, QUEUED_LEASE};
