//! Which earlier turns a prompt sees: at most `THREAD_HISTORY_TURNS` of the most recent turns,
//! newest kept first, while their estimated tokens stay within `THREAD_HISTORY_TOKENS`.

use super::head::TurnRecord;
use crate::rag::PastTurn;
use crate::usage::estimate_tokens;

/// The turns of `recent` (oldest first) a prompt sees, oldest first.
pub(super) fn select(recent: &[TurnRecord], max_turns: u32, max_tokens: u32) -> Vec<PastTurn> {
    let mut picked = Vec::new();
    let mut tokens = 0u64;
    for turn in recent.iter().rev().take(max_turns as usize) {
        let cost = estimate_tokens(&turn.question) + estimate_tokens(&turn.answer);
        if tokens + cost > u64::from(max_tokens) {
            break;
        }
        tokens += cost;
        picked.push(PastTurn {
            question: turn.question.clone(),
            standalone_question: turn.standalone_question.clone(),
            answer: turn.answer.clone(),
        });
    }
    picked.reverse();
    picked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rag::RunStatus;

    fn turn(n: u32, answer_words: usize) -> TurnRecord {
        TurnRecord {
            turn: n,
            run_id: format!("r{n}"),
            status: RunStatus::Completed,
            question: format!("question {n}"),
            standalone_question: format!("question {n}"),
            answer: "word ".repeat(answer_words),
            citations: Vec::new(),
            started_at_ms: 0,
            finished_at_ms: 0,
        }
    }

    #[test]
    fn newest_turns_first_within_turns_and_tokens() {
        let recent: Vec<TurnRecord> = (1..=6).map(|n| turn(n, 10)).collect();
        let all = select(&recent, 6, 2_000);
        assert_eq!(all.len(), 6);
        assert_eq!(all[0].question, "question 1");
        let two = select(&recent, 2, 2_000);
        assert_eq!(
            two.iter().map(|t| t.question.as_str()).collect::<Vec<_>>(),
            ["question 5", "question 6"]
        );
        // A huge earlier answer stops the window at the turns after it.
        let mut recent = recent;
        recent[3] = turn(4, 5_000);
        let budgeted = select(&recent, 6, 2_000);
        assert_eq!(
            budgeted
                .iter()
                .map(|t| t.question.as_str())
                .collect::<Vec<_>>(),
            ["question 5", "question 6"]
        );
    }
}
