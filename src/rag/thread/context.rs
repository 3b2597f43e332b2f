//! What a run of a conversation thread carries in its state: the thread's id, the turn's
//! number, the question as asked and the earlier turns its prompts see; and the rule for a
//! caller-chosen thread id.

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
pub(crate) struct PastTurn {
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
    pub(crate) history: Vec<PastTurn>,
    /// The standalone rewrite, once `contextualize_question` ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standalone_question: Option<String>,
    /// `THREAD_HISTORY_TURNS` when the turn started: turns the head keeps.
    pub(crate) keep_turns: u32,
    /// `THREAD_TTL_SECONDS` when the turn started.
    pub(crate) ttl_secs: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_checked() {
        assert!(validate_id("chat-42_a.b:c").is_ok());
        assert!(validate_id("").is_err());
        assert!(validate_id("a b").is_err());
        assert!(validate_id(&"a".repeat(129)).is_err());
    }
}
