//! Asking back (`CLARIFY`): a question that refers to something nothing names is not guessed
//! at. The run starts with the `clarify` step instead, which asks what the reference means
//! (offering the subjects the knowledge base finds for the rest of the question) and waits;
//! the answer completes the question, and the run goes on at its usual first step.
//!
//! The signal, deliberately narrow (a run that asks when it need not costs a person's time):
//! the question is a run's first turn (no earlier turn of its thread could name the subject),
//! it holds a referring word (`it`, `its`, `this`, `that`, `these`, `those`, `they`, `them`,
//! `their`), it is one clause (no `and`, `or`, `but`: "What is serde and how do I use it?"
//! names its subject in the first), and besides the question's scaffolding it has at most two
//! words of content ("How do I install it?", "Is it thread safe?", "Does it support async?").
//! "How do I use it with tokio in a web server?" names a subject and is answered.

use super::nodes::Step;
use super::person::Interrupt;
use super::{RagGraph, RagState};
use crate::engine::StepOutput;
use crate::llm::{content_words, words};
use serde_json::json;

/// The words that refer to a subject named elsewhere.
const REFERRING: [&str; 9] = [
    "it", "its", "this", "that", "these", "those", "they", "them", "their",
];
/// Most words of content a question that asks back has (its verb, and a word about it).
const MAX_CONTENT_WORDS: usize = 2;
/// Words that join clauses: a question with one may name its subject in another clause.
const JOINING: [&str; 3] = ["and", "or", "but"];
/// Subjects offered with a clarifying question.
const OPTIONS: usize = 3;
/// Passages searched for them.
const SEARCHED: usize = 10;

/// The referring word of `question` that nothing in it names, if any.
pub(crate) fn dangling(question: &str) -> Option<String> {
    let word = words(question).find(|w| REFERRING.contains(&w.as_str()))?;
    // A code-like token (`serde::Deserialize`, `Cargo.toml`, `--release`) names something.
    let code_like = question
        .split_whitespace()
        .any(|t| t.contains("::") || t.contains('`') || t.starts_with('-') || t.contains('/'));
    let joined = words(question).any(|w| JOINING.contains(&w.as_str()));
    let content = content_words(question).count();
    (!code_like && !joined && content <= MAX_CONTENT_WORDS).then_some(word)
}

/// True when a run of `state` should start by asking back.
pub(super) fn needed(graph: &RagGraph, state: &RagState) -> bool {
    let earlier_turns = state.thread.as_ref().is_some_and(|t| !t.history.is_empty());
    graph.interrupts.clarify && !earlier_turns && dangling(&state.request.question).is_some()
}

/// The `clarify` step: asks what the question's reference means, offering the titles of the
/// passages the knowledge base finds for the question (a failed search offers none: the
/// question is asked anyway), and waits; the run then goes on at its entry node.
pub(super) async fn clarify(graph: &RagGraph, state: &mut RagState) -> Step {
    let word = dangling(&state.request.question).unwrap_or_else(|| "it".to_owned());
    let mut options = state.request.retrieval_options();
    options.filter = super::tenant::pinned(
        options.filter.take(),
        graph.tenant_key.as_deref(),
        &state.caller,
    );
    options.limit = SEARCHED;
    let found = match graph.kb.retrieve(&state.request.question, &options).await {
        Ok(found) => found,
        Err(error) => {
            tracing::warn!(%error, "no subjects to offer with the clarifying question");
            Vec::new()
        }
    };
    let mut titles: Vec<String> = Vec::new();
    for doc in found {
        if titles.len() < OPTIONS && !doc.title.is_empty() && !titles.contains(&doc.title) {
            titles.push(doc.title);
        }
    }
    let interrupt = Interrupt::Clarify {
        question: format!(
            "What does \"{word}\" refer to in \"{}\"? Name what you are asking about.",
            state.request.question
        ),
        options: titles,
    };
    let details = json!({ "interrupt": interrupt });
    state.person.pending = Some(interrupt);
    Ok(StepOutput::wait(graph.entry(state), details))
}

/// The question completed by `answer`: a short answer (a name, up to six words) takes the
/// referring word's place ("How do I install it?" + "tokio": "How do I install tokio?";
/// a possessive becomes `'s`); a longer one follows the question in parentheses.
pub(crate) fn clarified(question: &str, answer: &str) -> String {
    let short = answer.split_whitespace().count() <= 6 && !answer.contains(['(', ')']);
    if short {
        if let Some((start, end, word)) = first_referring(question) {
            let possessive = matches!(word.as_str(), "its" | "their");
            let name = if possessive {
                format!("{answer}'s")
            } else {
                answer.to_owned()
            };
            return format!("{}{name}{}", &question[..start], &question[end..]);
        }
    }
    format!("{question} ({answer})")
}

/// Byte range and lowercase text of the first referring word of `question`.
fn first_referring(question: &str) -> Option<(usize, usize, String)> {
    let mut start = None;
    for (i, c) in question.char_indices().chain([(question.len(), ' ')]) {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                let word = question[s..i].to_lowercase();
                if REFERRING.contains(&word.as_str()) {
                    return Some((s, i, word));
                }
                start = None;
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_nothing_names_dangles_and_a_named_subject_does_not() {
        for q in [
            "How do I install it?",
            "What does this do?",
            "Is it fast?",
            "How do I configure them?",
            "What is its license?",
            "Is it thread safe?",
            "Does it support async?",
        ] {
            assert!(dangling(q).is_some(), "{q}");
        }
        for q in [
            "How do I install tokio?",
            "How do I use it with tokio in a web server?",
            "What is serde and how do I use it?",
            "Which crate parses TOML files that users edit by hand?",
            "What is `it` in Kotlin?",
            "How do I install serde::Deserialize derive support for it?",
            "What is the capital of France?",
        ] {
            assert_eq!(dangling(q), None, "{q}");
        }
    }

    #[test]
    fn a_short_answer_takes_the_references_place_and_a_long_one_follows() {
        assert_eq!(
            clarified("How do I install it?", "tokio"),
            "How do I install tokio?"
        );
        assert_eq!(
            clarified("What is its license?", "serde"),
            "What is serde's license?"
        );
        assert_eq!(
            clarified(
                "Is it fast?",
                "the regex crate, compared with PCRE2 in Rust"
            ),
            "Is it fast? (the regex crate, compared with PCRE2 in Rust)"
        );
        // Words that merely contain a referring word are left alone.
        assert_eq!(
            clarified("Does itertools do it?", "zip"),
            "Does itertools do zip?"
        );
    }
}
