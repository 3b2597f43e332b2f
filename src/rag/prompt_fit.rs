//! Prompts that fit the model's context window (`LLM_CONTEXT_TOKENS`) together with the call's
//! output cap, before any call goes out.
//!
//! Tokens are counted without the model's tokenizer, so the count is deliberately high: three
//! characters a token (English prose runs near four; code, Markdown and other languages lower),
//! plus a fixed allowance per message for the chat template, and a tenth of the window kept
//! free. What does not fit is left out in a fixed order: thread history first (oldest turns
//! first, and never more than a quarter of the room), then documents, lowest ranked first; the
//! last document that partly fits is trimmed at a word boundary rather than dropped. When a
//! server still answers that the prompt is too long, the workflow asks once more with half the
//! room ([`Room::halved`]).

use crate::config::ModelWindow;
use crate::knowledge::Document;
use serde_json::{json, Value};

/// Characters counted as one token: fewer than any common tokenizer averages, so the count
/// errs high.
const CHARS_PER_TOKEN: u64 = 3;
/// Tokens counted per message and per quoted document for the template around them.
const OVERHEAD_TOKENS: u64 = 16;
/// A document is trimmed only when at least this many tokens of it would remain.
const MIN_TRIMMED_TOKENS: u64 = 48;

/// The tokens `text` is counted as.
pub(crate) fn tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(CHARS_PER_TOKEN) + OVERHEAD_TOKENS
}

/// The prompt tokens one call may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Room(u64);

impl Room {
    /// The room of a call capped at `max_tokens` in `window`: nine tenths of the window less
    /// the cap.
    pub(crate) fn of(window: ModelWindow, max_tokens: u32) -> Self {
        let usable = u64::from(window.context_tokens) * 9 / 10;
        Room(usable.saturating_sub(u64::from(max_tokens)))
    }

    /// Half the room: the one retry after a server said the prompt was too long.
    pub(crate) fn halved(self) -> Self {
        Room(self.0 / 2)
    }

    /// The tokens left once `fixed` (the prompt without its documents) is counted.
    pub(crate) fn after(self, fixed: u64) -> u64 {
        self.0.saturating_sub(fixed)
    }

    /// What thread history may take of an answer prompt: a quarter of the room.
    pub(crate) fn history_share(self) -> u64 {
        self.0 / 4
    }
}

/// What was left out of a prompt to make it fit; recorded in the step's details.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Fit {
    /// Documents left out (the lowest ranked).
    pub(crate) dropped: usize,
    /// Documents cut short.
    pub(crate) trimmed: usize,
    /// Earlier thread turns left out (the oldest).
    pub(crate) history_dropped: usize,
}

impl Fit {
    /// Nothing was left out.
    pub(crate) fn is_whole(self) -> bool {
        self == Fit::default()
    }

    /// The step-details value (`prompt_fit`).
    pub(crate) fn details(self) -> Value {
        json!({
            "documents_dropped": self.dropped,
            "documents_trimmed": self.trimmed,
            "history_dropped": self.history_dropped,
        })
    }

    /// Adds `self` to `details` as `prompt_fit` when something was left out.
    pub(crate) fn record(self, details: &mut Value) {
        if !self.is_whole() {
            details["prompt_fit"] = self.details();
        }
    }

    /// Both fits together (a step of several calls).
    pub(crate) fn add(self, other: Fit) -> Fit {
        Fit {
            dropped: self.dropped + other.dropped,
            trimmed: self.trimmed + other.trimmed,
            history_dropped: self.history_dropped + other.history_dropped,
        }
    }
}

/// The documents that fit in `room` once `fixed` tokens are spent, best first: the first ones
/// whole, then at most one trimmed, the rest left out.
pub(crate) fn fit_documents(
    documents: &[Document],
    room: Room,
    fixed: u64,
) -> (Vec<Document>, Fit) {
    let mut left = room.after(fixed);
    let mut kept = Vec::with_capacity(documents.len());
    let mut fit = Fit::default();
    for (i, document) in documents.iter().enumerate() {
        let cost = tokens(&document.title) + tokens(&document.content);
        if cost <= left {
            left -= cost;
            kept.push(document.clone());
            continue;
        }
        let for_content = left.saturating_sub(tokens(&document.title) + OVERHEAD_TOKENS);
        if for_content >= MIN_TRIMMED_TOKENS {
            let mut trimmed = document.clone();
            trimmed.content = cut(&document.content, (for_content * CHARS_PER_TOKEN) as usize);
            kept.push(trimmed);
            fit.trimmed = 1;
            fit.dropped = documents.len() - i - 1;
        } else {
            fit.dropped = documents.len() - i;
        }
        break;
    }
    (kept, fit)
}

/// How many of the newest `turns` (each counted by `cost`) fit in `budget` tokens; the older
/// ones are left out.
pub(crate) fn fit_history<T>(turns: &[T], budget: u64, cost: impl Fn(&T) -> u64) -> usize {
    let mut left = budget;
    let mut kept = 0;
    for turn in turns.iter().rev() {
        let c = cost(turn);
        if c > left {
            break;
        }
        left -= c;
        kept += 1;
    }
    kept
}

/// `text` cut to at most `chars` characters, at the last word boundary, marked with `…`.
fn cut(text: &str, chars: usize) -> String {
    let Some((end, _)) = text.char_indices().nth(chars.saturating_sub(1)) else {
        return text.to_owned();
    };
    let head = &text[..end];
    let head = head
        .rfind(char::is_whitespace)
        .map_or(head, |at| &head[..at]);
    format!("{}…", head.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(n: usize, chars: usize) -> Document {
        Document::passage(
            n.to_string(),
            format!("doc {n}"),
            format!("kb://{n}"),
            "word ".repeat(chars / 5),
        )
    }

    const SMALL: ModelWindow = ModelWindow {
        context_tokens: 2_048,
        max_answer_tokens: 1_024,
        reasoning_tokens: 0,
    };

    #[test]
    fn the_room_is_nine_tenths_of_the_window_less_the_cap() {
        assert_eq!(Room::of(SMALL, 1_024), Room(819));
        assert_eq!(Room::of(SMALL, 32), Room(1_811));
        assert_eq!(Room::of(SMALL, 1_024).halved(), Room(409));
    }

    #[test]
    fn documents_are_kept_best_first_then_one_trimmed_then_the_rest_dropped() {
        // 600 characters: 200 + 16 tokens of content, 3 + 16 of title.
        let docs: Vec<Document> = (1..=4).map(|n| doc(n, 600)).collect();
        let (kept, fit) = fit_documents(&docs, Room::of(SMALL, 1_024), 200);
        // 619 tokens after the fixed part: two whole (234 each), the third trimmed.
        assert_eq!(kept.len(), 3);
        assert_eq!(kept[0], docs[0]);
        assert_eq!(kept[1], docs[1]);
        assert!(kept[2].content.ends_with('…'));
        assert!(tokens(&kept[2].content) < tokens(&docs[2].content));
        assert_eq!(
            fit,
            Fit {
                dropped: 1,
                trimmed: 1,
                history_dropped: 0
            }
        );
        // All fit in a large window: nothing is recorded.
        let large = ModelWindow::default();
        let (kept, fit) = fit_documents(&docs, Room::of(large, 1_024), 200);
        assert_eq!((kept.len(), fit.is_whole()), (4, true));
        // No room at all: every document is left out, none trimmed.
        let (kept, fit) = fit_documents(&docs, Room::of(SMALL, 1_024), 900);
        assert_eq!((kept.len(), fit.dropped, fit.trimmed), (0, 4, 0));
    }

    #[test]
    fn history_keeps_the_newest_turns_within_a_quarter_of_the_room() {
        let turns = [100u64, 100, 100, 100];
        assert_eq!(fit_history(&turns, Room(800).history_share(), |t| *t), 2);
        assert_eq!(fit_history(&turns, Room(8_000).history_share(), |t| *t), 4);
        assert_eq!(fit_history(&turns, Room(100).history_share(), |t| *t), 0);
    }

    #[test]
    fn a_cut_ends_at_a_word_boundary() {
        assert_eq!(cut("alpha beta gamma", 12), "alpha beta…");
        assert_eq!(cut("short", 12), "short");
    }
}
