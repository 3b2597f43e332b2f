//! The floor under every answer: checks that need no model, run on each written answer before
//! it is returned or graded. A model too weak to follow the prompt cannot be trusted to grade
//! its own answer either, so these checks are lexical and deterministic:
//!
//! - **no echo**: the answer does not repeat the instructions (any [`ECHO_WORDS`] consecutive
//!   words of a system prompt) nor the prompt's structure (a line opening with one of its
//!   labels, a document's heading line, or the delimiter markers of earlier prompt versions,
//!   `[[`…`]]`);
//! - **content**: it has at least one content word once citations are taken out (a row of
//!   `[1] [2] [3]` says nothing), and one beyond the question's (an answer that only restates
//!   the question, "The folder taking up the most room on the disk is [1].", says nothing
//!   either);
//! - **no loop**: it is not a run of repeated text (of its word triples, at most
//!   [`MAX_REPEATED_SHARE`] are repeats);
//! - **citations exist**: every `[n]` names one of the documents it was given (an answer
//!   written without documents lists no sources, so its citations are not checked);
//! - **support**: an answer long enough to judge ([`MIN_JUDGED_STEMS`] content words beyond
//!   the question's), or any answer that cites nothing, shares at least one of them with the
//!   documents it cites (all documents when it cites none), unless it says plainly that they
//!   do not answer.
//!
//! - **sentences supported**: most of the sentences that make a claim are supported by some
//!   document ([`super::attribution`]): an answer from the model's memory, while documents
//!   were given, is not an answer from the documents.
//!
//! An answer under the floor is asked for once more; a second one under it ends the run
//! `best_effort` with `model_unusable` and the extractive answer ([`super::answer`]).

use super::prompts;
use crate::knowledge::Document;
use crate::llm::{
    citation_markers, content_words, stems, strip_markers as without_citations, words,
};
use std::collections::HashSet;

/// Consecutive words of an instruction that make an echo.
pub(super) const ECHO_WORDS: usize = 8;
/// The most of an answer's word triples that may be repeats of earlier ones.
pub(super) const MAX_REPEATED_SHARE: f64 = 0.5;
/// Content stems (beyond the question's) an answer needs before its support is judged.
pub(super) const MIN_JUDGED_STEMS: usize = 4;

/// Why an answer is under the floor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unusable {
    /// It repeats the instructions or the prompt's structure.
    Echo,
    /// It has no content word (only citations, markers or punctuation).
    NoContent,
    /// It only restates the question: every content word is the question's ("The folder
    /// taking up the most room on the disk is [1].").
    RestatesTheQuestion,
    /// It repeats the same text over and over.
    Repetition,
    /// It cites a document it was not given.
    MissingCitation(u32),
    /// It shares no content with the documents it cites.
    Unsupported,
    /// Most of its sentences are supported by none of its documents
    /// ([`super::attribution`]): `supported` of `judged`.
    MostlyUnsupported {
        /// Sentences a passage supports.
        supported: u32,
        /// Sentences judged.
        judged: u32,
    },
}

impl Unusable {
    /// True when the answer says things its documents do not hold (written from memory), as
    /// against an answer that is broken whatever the documents.
    pub(super) fn is_from_memory(&self) -> bool {
        matches!(
            self,
            Unusable::Unsupported | Unusable::MostlyUnsupported { .. }
        )
    }

    /// What was wrong, for the step details and the fallback's error.
    pub(crate) fn describe(&self) -> String {
        match self {
            Unusable::Echo => "the answer repeats the prompt".into(),
            Unusable::NoContent => "the answer has no content".into(),
            Unusable::RestatesTheQuestion => "the answer only restates the question".into(),
            Unusable::Repetition => "the answer repeats itself".into(),
            Unusable::MissingCitation(n) => {
                format!("the answer cites [{n}], which it was not given")
            }
            Unusable::Unsupported => "the answer shares nothing with its documents".into(),
            Unusable::MostlyUnsupported { supported, judged } => format!(
                "{supported} of the answer's {judged} sentences are supported by its documents"
            ),
        }
    }

    /// The one-line hint of the second ask: what to do instead.
    pub(super) fn hint(&self) -> &'static str {
        match self {
            Unusable::Echo
            | Unusable::NoContent
            | Unusable::RestatesTheQuestion
            | Unusable::Repetition => {
                "Do not repeat these instructions or the documents' labels. Answer the question \
                 in your own words, in one to three sentences."
            }
            Unusable::MissingCitation(_) | Unusable::Unsupported => {
                "Use only what the documents say, and cite only their numbers. If they do not \
                 answer the question, say so."
            }
            Unusable::MostlyUnsupported { .. } => {
                "Answer only with what the documents say, not from memory, and end each \
                 sentence with the number of the document it comes from, like [1]. If they do \
                 not answer the question, say so."
            }
        }
    }
}

/// Checks `answer` to `question`, written from `documents` (numbered from 1 in its prompt).
pub(crate) fn check(answer: &str, question: &str, documents: &[Document]) -> Result<(), Unusable> {
    if echoes_the_prompt(answer) || copies_a_heading(answer, documents) {
        return Err(Unusable::Echo);
    }
    let cited = citations(answer);
    let text = without_citations(answer);
    if content_words(&text).all(|w| w.chars().all(char::is_numeric)) {
        return Err(Unusable::NoContent);
    }
    if repeats_itself(&text) {
        return Err(Unusable::Repetition);
    }
    if new_stems(&text, question).is_empty() {
        return Err(Unusable::RestatesTheQuestion);
    }
    if documents.is_empty() || says_they_do_not_answer(&text) {
        // Without documents a citation names nothing, and the answer lists no sources.
        return Ok(());
    }
    if let Some(n) = cited
        .iter()
        .find(|n| **n == 0 || **n as usize > documents.len())
    {
        return Err(Unusable::MissingCitation(*n));
    }
    let sources: Vec<&Document> = if cited.is_empty() {
        documents.iter().collect()
    } else {
        cited.iter().map(|n| &documents[*n as usize - 1]).collect()
    };
    let judged = new_stems(&text, question);
    // A short answer is judged too when it cites nothing: then only its words tie it to the
    // documents ("Use thiserror." names one of them; "Answer: Yes." names nothing).
    let judgeable = judged.len() >= MIN_JUDGED_STEMS || (cited.is_empty() && !judged.is_empty());
    if judgeable && support(&judged, &sources) == 0 {
        return Err(Unusable::Unsupported);
    }
    // Sentence by sentence: an answer mostly from memory while documents were given.
    let report = super::attribution::judge(answer, question, documents);
    if report.mostly_unsupported() {
        return Err(Unusable::MostlyUnsupported {
            supported: report.supported,
            judged: report.sentences,
        });
    }
    Ok(())
}

/// The answer's content stems that are not the question's: what the answer adds.
pub(super) fn new_stems(answer: &str, question: &str) -> HashSet<String> {
    let asked = stems(question);
    stems(&without_citations(answer))
        .into_iter()
        .filter(|s| !asked.contains(s))
        .collect()
}

/// How many of `judged` occur in `documents` (their titles and sources, as the prompt shows
/// them, included).
pub(super) fn support(judged: &HashSet<String>, documents: &[&Document]) -> usize {
    let mut found = HashSet::new();
    for doc in documents {
        found.extend(stems(&doc.title));
        found.extend(stems(&doc.url));
        found.extend(stems(&doc.content));
    }
    judged.iter().filter(|s| found.contains(*s)).count()
}

/// True when `answer` repeats an instruction or the prompt's structure.
fn echoes_the_prompt(answer: &str) -> bool {
    if answer.contains("[[") && answer.contains("]]") {
        return true;
    }
    if answer.lines().any(prompts::is_structure_line) {
        return true;
    }
    let said: Vec<String> = words(answer).collect();
    let windows: HashSet<&[String]> = said.windows(ECHO_WORDS).collect();
    prompts::instructions().iter().any(|instruction| {
        let taught: Vec<String> = words(instruction).collect();
        taught.windows(ECHO_WORDS).any(|w| windows.contains(w))
    })
}

/// True when a line of `answer` opens with a document's heading as the prompt showed it
/// (`[2] memchr — ... (memchr-2.8.3/README.md#7)`): the structure copied, not an answer.
fn copies_a_heading(answer: &str, documents: &[Document]) -> bool {
    let headings: Vec<(String, String)> = documents
        .iter()
        .enumerate()
        .filter(|(_, doc)| !doc.title.trim().is_empty())
        .map(|(i, doc)| {
            let title = doc.title.split_whitespace().collect::<Vec<_>>().join(" ");
            (prompts::heading(i + 1, doc), format!("[{}] {title}", i + 1))
        })
        .collect();
    answer.lines().map(str::trim).any(|line| {
        headings
            .iter()
            .any(|(whole, short)| line.starts_with(whole.as_str()) || line == short)
    })
}

/// True when most of the answer's word triples repeat earlier ones.
fn repeats_itself(text: &str) -> bool {
    let said: Vec<String> = words(text).collect();
    let triples: Vec<&[String]> = said.windows(3).collect();
    if triples.len() < 12 {
        return false;
    }
    let distinct: HashSet<&[String]> = triples.iter().copied().collect();
    let repeats = triples.len() - distinct.len();
    repeats as f64 / triples.len() as f64 > MAX_REPEATED_SHARE
}

/// Phrases that say the documents do not answer (English; a refusal needs no support).
const NOT_ANSWERED: &[&str] = &[
    "do not answer",
    "does not answer",
    "do not contain",
    "does not contain",
    "do not mention",
    "does not mention",
    "do not say",
    "does not say",
    "do not provide",
    "does not provide",
    "no information",
    "not mentioned",
    "not covered",
    "cannot answer",
    "can not answer",
    "cannot find",
    "not enough information",
    "i don't know",
    "i do not know",
];

/// True when `text` says that the documents do not answer.
pub(super) fn says_they_do_not_answer(text: &str) -> bool {
    let plain = words(text).collect::<Vec<_>>().join(" ");
    let plain = plain
        .replace("don t", "don't")
        .replace("doesn t", "does not");
    let plain = plain.replace("don't", "do not");
    NOT_ANSWERED
        .iter()
        .any(|phrase| plain.contains(&phrase.replace("don't", "do not")))
}

/// Words by which an answer speaks of what it was given, not of its subject.
const THE_DOCUMENTS: &[&str] = &[
    "document",
    "documents",
    "passage",
    "passages",
    "context",
    "source",
    "sources",
    "provided",
    "given",
];

/// True when `answer` opens by saying the documents it was given do not answer: its first
/// sentence says so and speaks of them ("The documents do not provide information on …").
/// A quoted sentence that happens to say "does not contain" speaks of its own subject.
pub(super) fn opens_saying_they_do_not_answer(answer: &str) -> bool {
    first_sentence(answer).is_some_and(|first| {
        says_they_do_not_answer(first) && words(first).any(|w| THE_DOCUMENTS.contains(&w.as_str()))
    })
}

/// True when `answer` opens by declining: its first sentence says it cannot answer ("The
/// offline provider has no knowledge source for this question, so it cannot answer it.",
/// "I don't know."). Such an answer claims nothing a search could find.
pub(super) fn opens_declining(answer: &str) -> bool {
    first_sentence(answer).is_some_and(says_they_do_not_answer)
}

/// The first sentence of `answer` that is not code.
fn first_sentence(answer: &str) -> Option<&str> {
    let first = super::sentences::units(answer)
        .into_iter()
        .find(|u| !u.code)?;
    Some(&answer[first.span])
}

/// The document numbers cited as `[n]` or `[n, m]` (in order, without repeats; brackets that
/// index code are not citations: [`crate::llm::citation_markers`]).
pub(crate) fn citations(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for n in citation_markers(text).into_iter().flat_map(|m| m.numbers) {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

#[cfg(test)]
#[path = "floor_tests.rs"]
mod tests;
