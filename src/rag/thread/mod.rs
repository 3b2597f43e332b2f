//! Conversation threads: a run with a `thread_id` is the next turn of the caller's thread.
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the thread's stored shapes and the context a turn's state carries |
//! | `service.rs` | [`Threads`]: start a turn (or answer busy), read, list, delete |
//! | `record.rs` | recording a finished turn |
//! | `history.rs` | which earlier turns a prompt sees, and how they are shown |
//! | `contextualize.rs` | the `contextualize_question` node |
//!
//! A thread belongs to its caller: its store key starts with the caller's digest, so another
//! caller's thread with the same id is simply another thread, and reading one of someone
//! else's is not found.

mod contextualize;
mod history;
mod record;
mod service;
#[cfg(test)]
mod tests;

pub(crate) use contextualize::contextualize_question;
pub(crate) use history::{answer_history, estimate as estimate_history};
pub(crate) use record::record_finished;
pub use service::{ThreadError, ThreadPage, Threads};

use super::{Citation, RunStatus};
use serde::{Deserialize, Serialize};

/// Longest thread id, in characters.
const MAX_ID_CHARS: usize = 128;

/// Checks a caller-chosen thread id: 1..=128 letters, digits, `-`, `_`, `.` or `:`.
pub(crate) fn validate_id(id: &str) -> Result<(), String> {
    let ok = !id.is_empty()
        && id.chars().count() <= MAX_ID_CHARS
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "must be 1..={MAX_ID_CHARS} characters of letters, digits, '-', '_', '.' or ':', \
             e.g. a UUID; reuse it for every turn of one conversation"
        ))
    }
}

/// An earlier turn as a prompt sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PastTurn {
    /// The question as asked.
    pub question: String,
    /// The question as it was searched (its standalone rewrite, or itself).
    pub standalone_question: String,
    /// The answer given.
    pub answer: String,
}

/// What a run of a thread carries in its state (and so in its checkpoint, for resumes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadContext {
    /// The caller's thread id.
    pub thread_id: String,
    /// This turn's number (1 for the first).
    pub turn: u32,
    /// The question as asked (`request.question` becomes the standalone one).
    pub question: String,
    /// Recent earlier turns, oldest first, within `THREAD_HISTORY_TOKENS`.
    pub history: Vec<PastTurn>,
    /// The standalone rewrite, once `contextualize_question` ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standalone_question: Option<String>,
    /// `THREAD_HISTORY_TURNS` when the turn started: turns the head keeps.
    pub(crate) keep_turns: u32,
    /// `THREAD_TTL_SECONDS` when the turn started.
    pub(crate) ttl_secs: u64,
}

/// A finished turn, as stored (one turn item each; the head keeps the recent ones).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    /// Its number (1 for the first).
    pub turn: u32,
    /// The run that answered it.
    pub run_id: String,
    /// How the run ended.
    pub status: RunStatus,
    /// The question as asked.
    pub question: String,
    /// The question as searched.
    pub standalone_question: String,
    /// The answer.
    pub answer: String,
    /// Its sources.
    pub citations: Vec<Citation>,
    /// When the turn started (epoch ms).
    pub started_at_ms: u64,
    /// When it was recorded (epoch ms).
    pub finished_at_ms: u64,
}

/// The turn a thread is running now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ActiveTurn {
    pub(crate) run_id: String,
    pub(crate) turn: u32,
    pub(crate) started_at_ms: u64,
}

/// A thread's head item: bounded whatever the thread's length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadHead {
    /// The caller's thread id.
    pub thread_id: String,
    /// When the first turn started (epoch ms).
    pub created_at_ms: u64,
    /// When a turn last started or finished (epoch ms).
    pub updated_at_ms: u64,
    /// Turns recorded so far.
    pub turns: u32,
    /// The unfinished turn, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) active: Option<ActiveTurn>,
    /// The most recent turns, oldest first (at most `THREAD_HISTORY_TURNS`).
    pub(crate) recent: Vec<TurnRecord>,
}

impl ThreadHead {
    fn new(thread_id: &str, now_ms: u64) -> Self {
        Self {
            thread_id: thread_id.to_owned(),
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            turns: 0,
            active: None,
            recent: Vec::new(),
        }
    }

    /// Records `turn`, keeping the `keep` most recent in the head.
    fn append(&mut self, turn: TurnRecord, keep: u32, now_ms: u64) {
        self.turns = self.turns.max(turn.turn);
        self.recent.retain(|t| t.turn != turn.turn);
        self.recent.push(turn);
        let excess = self.recent.len().saturating_sub(keep.max(1) as usize);
        self.recent.drain(..excess);
        self.active = None;
        self.updated_at_ms = now_ms;
    }

    /// The run id of the unfinished turn, if any.
    pub fn active_run(&self) -> Option<&str> {
        self.active.as_ref().map(|a| a.run_id.as_str())
    }
}
