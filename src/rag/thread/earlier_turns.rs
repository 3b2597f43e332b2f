//! How the earlier turns a run carries (chosen when its turn started: `runs::thread`'s window)
//! are shown to the prompts. The contextualize call gets them as typed inputs (one context
//! document per turn: its standalone question as the title, its answer as the content), the
//! answer prompt as a "Conversation so far" block before the question.

use super::context::PastTurn;
use crate::knowledge::{DocKind, Document};
use crate::rag::RagState;
use crate::usage::estimate_tokens;
use std::fmt::Write;

/// The earlier turns as context documents of the contextualize call, oldest first.
pub(super) fn as_documents(history: &[PastTurn]) -> Vec<Document> {
    history
        .iter()
        .enumerate()
        .map(|(i, turn)| Document {
            id: format!("turn-{}", i + 1),
            title: turn.standalone_question.clone(),
            url: format!("thread://turn/{}", i + 1),
            content: turn.answer.clone(),
            score: 0.0,
            kind: DocKind::Episode,
            clear_match: false,
            from_graph: false,
            vector_rank: None,
        })
        .collect()
}

/// The "Conversation so far" block of the answer prompt, when the run has earlier turns.
pub(crate) fn answer_history(turns: &[super::PastTurn]) -> Option<String> {
    if turns.is_empty() {
        return None;
    }
    let mut block = String::from("Conversation so far:\n");
    for turn in turns {
        let _ = write!(
            block,
            "User: {}\nAssistant: {}\n",
            crate::rag::prompts::neutralise(&turn.question).replace('\n', " "),
            crate::rag::prompts::neutralise(turn.answer.trim_end())
        );
    }
    block.push('\n');
    Some(block)
}

/// Estimated prompt tokens of the earlier turns (token budgets before a call).
pub(crate) fn estimate(state: &RagState) -> u64 {
    state.thread.as_ref().map_or(0, |t| {
        t.history
            .iter()
            .map(|h| estimate_tokens(&h.question) + estimate_tokens(&h.answer))
            .sum()
    })
}
