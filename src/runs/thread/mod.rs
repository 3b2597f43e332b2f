//! Conversation threads as the run life cycle keeps them: a run with a `thread_id` is the next
//! turn of the caller's thread. What a turn's run carries (its context, the earlier turns its
//! prompts see) is the workflow's (`crate::rag::thread`).
//!
//! | file | owns |
//! |---|---|
//! | `head.rs` | the stored shapes: the thread's head and its turns |
//! | `heads.rs` | reading and writing a head in the store |
//! | `service.rs` | [`Threads`]: start a turn (or answer busy), abandon it, read, list, delete |
//! | `record.rs` | recording a finished turn |
//! | `window.rs` | which earlier turns a new turn's prompts see |
//! | `error.rs` | [`ThreadError`] |
//!
//! A thread belongs to its caller: its store key starts with the caller's digest, so another
//! caller's thread with the same id is simply another thread, and reading one of someone
//! else's is not found.

mod error;
mod head;
mod heads;
mod record;
mod service;
#[cfg(test)]
mod tests;
mod window;

pub use error::ThreadError;
pub(crate) use head::{ThreadHead, TurnRecord};
pub(crate) use record::record_finished;
pub(crate) use service::ThreadPage;
pub use service::Threads;
