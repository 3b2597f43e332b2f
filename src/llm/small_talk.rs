//! Questions that plainly need no documents: small talk and arithmetic. The offline router
//! sends them to the model alone, and the workflow lets any router do so even when the search
//! found a clear match.

use super::lexical::content_words;

/// Small talk and arithmetic words: a question made only of these (and numbers) has no
/// domain terms.
#[rustfmt::skip]
const DOMAIN_FREE_WORDS: &[&str] = &[
    "hi", "hello", "hey", "thanks", "thank", "thx", "bye", "goodbye", "morning", "afternoon",
    "evening", "good", "great", "ok", "okay", "cheers", "name", "joke", "yourself", "plus",
    "minus", "times", "multiplied", "divided", "sum", "product", "difference", "squared",
    "cubed", "calculate", "compute", "equal", "equals", "percent", "half", "double", "twice",
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "hundred", "thousand", "million",
];

/// True when a question plainly needs no documents: every content word is small talk or
/// arithmetic ([`DOMAIN_FREE_WORDS`], numbers). The offline router sends it to the model
/// alone, and the workflow lets any router do so over a clear match.
pub(crate) fn needs_no_documents(question: &str) -> bool {
    content_words(question)
        .all(|w| w.chars().all(|c| c.is_numeric()) || DOMAIN_FREE_WORDS.contains(&w.as_str()))
}
