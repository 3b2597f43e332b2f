//! The offline provider's `contextualize_question`: a lexical rewrite of a follow-up.
//!
//! The subject of the conversation is the previous turn's standalone question without its
//! question words and its "aspect" words (cause, treatment, symptoms, ...): "What causes
//! patch canker in durian?" has the subject "patch canker in durian" (the span from its first
//! to its last subject word, so small words inside stay). A follow-up that refers back
//! carries it:
//!
//! - a referring word (`it`, `they`, `this`, `these disease`, ...) is replaced by it:
//!   "How is it treated?" becomes "How is patch canker in durian treated?";
//! - a follow-up that only names an aspect ("What about treatment?", "And the symptoms?")
//!   gets it appended: "What about treatment of patch canker in durian?";
//! - anything else (a new subject, or one already named) is kept as asked.

use super::lexical::{content_words, stem, words};
use crate::knowledge::Document;

/// Words that point back at the conversation's subject.
const REFERRING: &[&str] = &[
    "it", "its", "they", "them", "their", "this", "that", "these", "those",
];
/// Determiners that may take a noun with them ("this disease").
const DETERMINERS: &[&str] = &["this", "that", "these", "those"];
/// Openings of a follow-up that only names a new aspect.
const ASPECT_OPENINGS: &[&str] = &["what about", "how about", "and"];
/// Stems of what a question asks about a subject, rather than the subject itself.
#[rustfmt::skip]
const ASPECTS: &[&str] = &[
    "caus", "cause", "treat", "treatment", "control", "prevent", "prevention", "symptom", "sign",
    "spread", "manag", "management", "cure", "avoid", "stop", "kill", "identify", "recogni",
    "detect", "diagnos", "happen", "work", "mean", "look", "best", "way", "method", "remedy",
    "deal", "handl", "fight", "protect",
];

/// What a rewritten follow-up adds for an aspect it asks about, so a lexical search finds
/// passages that name it otherwise (a "Management" section for "treated").
const EXPANSIONS: &[(&str, &str)] = &[
    ("treat", "treatment, control and management"),
    ("cure", "treatment, control and management"),
    ("prevent", "prevention and management"),
    ("control", "control and management"),
    ("symptom", "symptoms and signs"),
];

/// `rewritten` with the expansion of the first aspect `asked` names, if any.
fn expanded(rewritten: String, asked: &[String]) -> String {
    let Some((_, more)) = EXPANSIONS
        .iter()
        .find(|(aspect, _)| asked.iter().any(|a| a.starts_with(aspect)))
    else {
        return rewritten;
    };
    let body = rewritten.trim_end_matches(['?', '.', '!', ' ']);
    format!("{body} ({more})?")
}

/// The follow-up `question`, standing alone given the earlier turns `history` (oldest
/// first; each turn's standalone question is its title).
pub(crate) fn standalone(question: &str, history: &[Document]) -> String {
    let question = question.trim();
    let Some(previous) = history.last() else {
        return question.to_owned();
    };
    let Some(subject) = subject(&previous.title) else {
        return question.to_owned();
    };
    let asked: Vec<String> = content_words(question).map(|w| stem(&w)).collect();
    let subject_stems: Vec<String> = content_words(&subject).map(|w| stem(&w)).collect();
    if subject_stems.iter().all(|s| asked.contains(s)) {
        return question.to_owned();
    }
    if let Some(rewritten) = replace_reference(question, &subject) {
        return expanded(rewritten, &asked);
    }
    let lower = question.to_lowercase();
    let opens_with_aspect = ASPECT_OPENINGS
        .iter()
        .any(|o| lower.starts_with(&format!("{o} ")));
    let only_aspects = !asked.is_empty() && asked.iter().all(|s| is_aspect(s));
    if opens_with_aspect || only_aspects {
        let body = question.trim_end_matches(['?', '.', '!', ' ']);
        return expanded(format!("{body} of {subject}?"), &asked);
    }
    question.to_owned()
}

fn is_aspect(stemmed: &str) -> bool {
    ASPECTS.iter().any(|a| stemmed.starts_with(a))
}

/// The span of `question` from its first subject word to its last, if it has one.
fn subject(question: &str) -> Option<String> {
    let tokens: Vec<&str> = question
        .split(|c: char| c.is_whitespace() || matches!(c, '?' | '!' | ',' | ';'))
        .filter(|t| !t.is_empty())
        .collect();
    let is_subject = |token: &str| {
        let mut content = content_words(token);
        content.next().is_some_and(|w| !is_aspect(&stem(&w)))
    };
    let first = tokens.iter().position(|t| is_subject(t))?;
    let last = tokens.iter().rposition(|t| is_subject(t))?;
    Some(
        tokens[first..=last]
            .join(" ")
            .trim_end_matches('.')
            .to_owned(),
    )
}

/// `question` with its first referring word (and a determiner's noun) replaced by `subject`.
fn replace_reference(question: &str, subject: &str) -> Option<String> {
    let tokens: Vec<&str> = question.split(' ').collect();
    let bare = |t: &str| words(t).next().unwrap_or_default();
    let at = tokens
        .iter()
        .position(|t| REFERRING.contains(&bare(t).as_str()))?;
    let word = bare(tokens[at]);
    let mut end = at;
    let takes_noun = DETERMINERS.contains(&word.as_str())
        && tokens.get(at + 1).is_some_and(|next| {
            content_words(next)
                .next()
                .is_some_and(|w| !is_aspect(&stem(&w)))
        });
    if takes_noun {
        end = at + 1;
    }
    // Keep the punctuation that followed the replaced words ("it?" -> "subject?").
    let last = tokens[end];
    let trailing: String = last
        .chars()
        .rev()
        .take_while(|c| !c.is_alphanumeric())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let replacement = match word.as_str() {
        "its" | "their" => format!("{subject}'s{trailing}"),
        _ => format!("{subject}{trailing}"),
    };
    let mut out: Vec<String> = tokens[..at].iter().map(|t| (*t).to_owned()).collect();
    out.push(replacement);
    out.extend(tokens[end + 1..].iter().map(|t| (*t).to_owned()));
    Some(out.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::DocKind;

    fn turn(question: &str) -> Document {
        Document {
            id: "turn-1".into(),
            title: question.into(),
            url: "thread://turn/1".into(),
            content: String::new(),
            score: 0.0,
            kind: DocKind::Episode,
            clear_match: false,
            from_graph: false,
            vector_rank: None,
        }
    }

    #[test]
    fn a_follow_up_carries_the_previous_subject() {
        let history = [turn("What causes patch canker in durian?")];
        for (follow_up, expected) in [
            (
                "How is it treated?",
                "How is patch canker in durian treated (treatment, control and management)?",
            ),
            (
                "How does this disease spread?",
                "How does patch canker in durian spread?",
            ),
            (
                "What are its symptoms?",
                "What are patch canker in durian's symptoms (symptoms and signs)?",
            ),
            (
                "What about treatment?",
                "What about treatment of patch canker in durian (treatment, control and management)?",
            ),
            ("Treatment?", "Treatment of patch canker in durian (treatment, control and management)?"),
            ("What causes pink disease?", "What causes pink disease?"),
            (
                "Is patch canker in durian contagious?",
                "Is patch canker in durian contagious?",
            ),
        ] {
            assert_eq!(standalone(follow_up, &history), expected, "{follow_up}");
        }
    }

    #[test]
    fn without_history_or_subject_the_question_is_kept() {
        assert_eq!(standalone("How is it treated?", &[]), "How is it treated?");
        let history = [turn("What causes it?")];
        assert_eq!(
            standalone("How is it treated?", &history),
            "How is it treated?"
        );
    }

    #[test]
    fn the_subject_skips_question_and_aspect_words() {
        assert_eq!(
            subject("What causes patch canker in durian?").unwrap(),
            "patch canker in durian"
        );
        assert_eq!(
            subject("How is patch canker in durian treated?").unwrap(),
            "patch canker in durian"
        );
        assert_eq!(
            subject("How do I control fruit borers?").unwrap(),
            "fruit borers"
        );
    }
}
