//! What a reasoning model thought, kept apart from what it answered.
//!
//! Reasoning models (DeepSeek-R1 and its distillations, Qwen3, OpenAI's o-series, Claude with
//! extended thinking) think before they answer, and that thinking arrives in one of two ways:
//! in a field of its own (`reasoning_content` or `reasoning` of an OpenAI-compatible server,
//! Bedrock's `reasoningContent` blocks), which a provider hands to [`Splitter::think`]; or at
//! the head of the message content as one `<think>…</think>` block, which [`Splitter::push`]
//! takes off piece by piece. Only what follows the block is the answer (or a decision's JSON),
//! with its leading whitespace dropped; a block that never closes (the reply was cut at its cap
//! while thinking) leaves an empty answer, which callers treat like any empty or cut reply.
//!
//! A block counts only at the start of the content (after whitespace): a `<think>` later in an
//! answer is the answer's text. Streamed pieces may split a tag anywhere ("<thi" + "nk>"), so
//! [`Splitter::push`] holds back the few characters that may still turn out to be a tag and
//! hands them over once they cannot; nothing of the block ever reaches the caller's sink.

/// Opens the thinking block.
const OPEN: &str = "<think>";
/// Closes it.
const CLOSE: &str = "</think>";

/// Where the content stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Part {
    /// Nothing but whitespace yet, or the start of what may be `<think>`.
    #[default]
    Start,
    /// Inside the block.
    Thinking,
    /// The block closed; whitespace after it is dropped.
    Closed,
    /// The answer.
    Answer,
}

/// Splits a reply's content into the leading thinking block and the answer, piece by piece,
/// and collects reasoning that arrives in a field of its own.
#[derive(Debug, Default)]
pub(crate) struct Splitter {
    part: Part,
    /// Text held back: it may still be (part of) a tag.
    held: String,
    answer: String,
    reasoning: String,
}

impl Splitter {
    /// Takes the next piece of the content; returns the part of it (and of what was held back
    /// before) that is answer text for sure, possibly empty.
    pub(crate) fn push(&mut self, piece: &str) -> String {
        let shown = match self.part {
            Part::Start => {
                self.held.push_str(piece);
                let text = self.held.trim_start();
                if let Some(rest) = text.strip_prefix(OPEN) {
                    let rest = rest.to_owned();
                    self.held.clear();
                    self.part = Part::Thinking;
                    return self.push(&rest);
                }
                if text.is_empty() || OPEN.starts_with(text) {
                    return String::new();
                }
                self.part = Part::Answer;
                std::mem::take(&mut self.held)
            }
            Part::Thinking => {
                self.held.push_str(piece);
                if let Some(end) = self.held.find(CLOSE) {
                    let rest = self.held.split_off(end);
                    self.reasoning.push_str(&self.held);
                    self.held.clear();
                    self.part = Part::Closed;
                    return self.push(&rest[CLOSE.len()..]);
                }
                // Keep the longest tail that may begin `</think>` (ASCII, so a char boundary).
                let keep = (1..CLOSE.len())
                    .rev()
                    .find(|&n| self.held.ends_with(&CLOSE[..n]))
                    .unwrap_or(0);
                let tail = self.held.split_off(self.held.len() - keep);
                self.reasoning.push_str(&self.held);
                self.held = tail;
                return String::new();
            }
            Part::Closed => {
                let text = piece.trim_start();
                if text.is_empty() {
                    return String::new();
                }
                self.part = Part::Answer;
                text.to_owned()
            }
            Part::Answer => piece.to_owned(),
        };
        self.answer.push_str(&shown);
        shown
    }

    /// Takes reasoning that arrived in a field of its own; none of it is answer text.
    pub(crate) fn think(&mut self, piece: &str) {
        self.reasoning.push_str(piece);
    }

    /// Ends the content: returns what was held back and is answer text after all (whitespace,
    /// or the start of a tag that never came), possibly empty. A block that is still open
    /// stays reasoning.
    pub(crate) fn finish(&mut self) -> String {
        let held = std::mem::take(&mut self.held);
        match self.part {
            Part::Start => {
                self.answer.push_str(&held);
                held
            }
            Part::Thinking => {
                self.reasoning.push_str(&held);
                String::new()
            }
            Part::Closed | Part::Answer => String::new(),
        }
    }

    /// The answer and the reasoning, once [`Splitter::finish`] was called.
    pub(crate) fn into_parts(self) -> Thought {
        Thought {
            answer: self.answer,
            reasoning: self.reasoning,
        }
    }
}

/// A whole reply, split.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Thought {
    /// What the model answered: the content without its thinking block.
    pub(crate) answer: String,
    /// What it thought, from the block and from the reasoning fields; never shown.
    pub(crate) reasoning: String,
}

/// Splits a whole reply: `content` and the `reasoning` a provider sent in a field of its own.
pub(crate) fn split(content: &str, reasoning: &str) -> Thought {
    let mut splitter = Splitter::default();
    splitter.think(reasoning);
    splitter.push(content);
    splitter.finish();
    splitter.into_parts()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streams `pieces` through a splitter: what the sink got, and the parts.
    fn stream(pieces: &[&str]) -> (String, Thought) {
        let mut splitter = Splitter::default();
        let mut shown = String::new();
        for piece in pieces {
            shown.push_str(&splitter.push(piece));
        }
        shown.push_str(&splitter.finish());
        (shown, splitter.into_parts())
    }

    #[test]
    fn a_leading_block_is_reasoning_and_the_rest_the_answer_without_its_leading_space() {
        let thought = split("<think>\nThe user asks X.\n</think>\n\n{\"a\": 1}", "");
        assert_eq!(thought.answer, "{\"a\": 1}");
        assert_eq!(thought.reasoning, "\nThe user asks X.\n");
        let thought = split("  \n<think></think>It is.", "");
        assert_eq!(
            (thought.answer.as_str(), thought.reasoning.as_str()),
            ("It is.", "")
        );
    }

    #[test]
    fn tags_split_across_pieces_never_reach_the_sink() {
        let (shown, thought) = stream(&[
            "<thi",
            "nk>I think",
            " hard</th",
            "in",
            "k>  ",
            "\nAn",
            "swer",
        ]);
        assert_eq!(shown, "Answer");
        assert_eq!(thought.answer, "Answer");
        assert_eq!(thought.reasoning, "I think hard");
        // One character at a time.
        let text = "<think>a < b </thin k</think> Yes.";
        let pieces: Vec<String> = text.chars().map(String::from).collect();
        let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
        let (shown, thought) = stream(&pieces);
        assert_eq!(shown, "Yes.");
        assert_eq!(thought.reasoning, "a < b </thin k");
    }

    #[test]
    fn an_unterminated_block_leaves_an_empty_answer() {
        let (shown, thought) = stream(&["<think>Let me see", "... </thi"]);
        assert_eq!(shown, "");
        assert_eq!(thought.answer, "");
        assert_eq!(thought.reasoning, "Let me see... </thi");
    }

    #[test]
    fn content_without_a_leading_block_is_the_answer_as_it_came() {
        let (shown, thought) = stream(&["  It ", "is <think>fine</think>."]);
        assert_eq!(shown, "  It is <think>fine</think>.");
        assert_eq!(thought.answer, shown);
        assert_eq!(thought.reasoning, "");
        // The start of a tag that never came is answer text, handed over at the end.
        let (shown, thought) = stream(&["<thi"]);
        assert_eq!((shown.as_str(), thought.answer.as_str()), ("<thi", "<thi"));
        let (shown, _) = stream(&["<th", "e end>"]);
        assert_eq!(shown, "<the end>");
        assert_eq!(stream(&["\n"]).0, "\n");
    }

    #[test]
    fn reasoning_fields_are_kept_apart_from_the_content() {
        let thought = split("{\"binary_score\": \"yes\"}", "The document mentions it.");
        assert_eq!(thought.answer, "{\"binary_score\": \"yes\"}");
        assert_eq!(thought.reasoning, "The document mentions it.");
        let thought = split("ａ<think>", "");
        assert_eq!(thought.answer, "ａ<think>", "multi-byte text is kept whole");
    }
}
