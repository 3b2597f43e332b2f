//! A thread as stored: its head item (bounded whatever the thread's length: the active turn and
//! a window of recent turns) and one item per finished turn.

use crate::rag::{Citation, RunStatus};
use serde::{Deserialize, Serialize};

/// A finished turn, as stored (one turn item each; the head keeps the recent ones).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TurnRecord {
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
pub(crate) struct ThreadHead {
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
    pub(super) fn new(thread_id: &str, now_ms: u64) -> Self {
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
    pub(super) fn append(&mut self, turn: TurnRecord, keep: u32, now_ms: u64) {
        self.turns = self.turns.max(turn.turn);
        self.recent.retain(|t| t.turn != turn.turn);
        self.recent.push(turn);
        let excess = self.recent.len().saturating_sub(keep.max(1) as usize);
        self.recent.drain(..excess);
        self.active = None;
        self.updated_at_ms = now_ms;
    }

    /// The run id of the unfinished turn, if any.
    pub(crate) fn active_run(&self) -> Option<&str> {
        self.active.as_ref().map(|a| a.run_id.as_str())
    }
}
