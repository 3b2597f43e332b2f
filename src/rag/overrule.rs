//! Grades overruled by a clear lexical signal, and when. A grade that contradicts what the
//! words plainly show is recorded in the step's details (`overruled`) and replaced, by four
//! rules:
//!
//! - **clear match**, only against a model that has shown itself unreliable in this run (an
//!   answer of its under the floor, unless it was written from memory over passages every
//!   grade rejected: [`RagState::model_doubted`](super::RagState)): a document
//!   the retrieval marked a clear match (`clear_match`: it holds the question's rare words) is
//!   relevant, whatever its grade says. A model that has not shown that keeps its verdicts, so
//!   a capable grader's `no` drives the rewrite loop and the web fallback as designed;
//! - **answer's passages**, when the grades and an answer were written from the same passages
//!   at once (speculation) and every passage was graded irrelevant: a passage of a clear
//!   match's document (the passage itself, or another passage of the same file) that the
//!   answer, written from it and passing the floor, stands on is relevant, and the model is
//!   doubted from then on (it contradicts itself: one of its two verdicts is wrong, and two
//!   signals, the question's rare words and the answer's, side with the answer). A passage
//!   that is no clear match keeps its grade: a model paraphrases whatever it is given, so an
//!   answer standing on a passage does not show that the passage is about the question;
//! - **rewrite's find**, when the query is the model's own hypothetical answer (a rewrite
//!   written as the first sentence of a document that answers) and every passage it found
//!   was graded irrelevant: a passage that is a clear match for that sentence (it holds the
//!   sentence's rare words, such as the command it names), or of a document named like the
//!   tool the sentence names in code (`` `date` `` and `date.1/PAGE.txt`: `rewrite_names`), is
//!   relevant, and the model is doubted from then on. The model said what an answering
//!   document holds, then rejected the document that holds it. A rewrite given as search words
//!   claims nothing and keeps the grades as given;
//! - **sentences unsupported**, whatever the model: an answer graded grounded most of whose
//!   sentences no document supports ([`super::attribution`]) is not grounded; an answer that
//!   says the documents do not answer is left to its grade.
//!
//! Each rule only ever turns a grade the other way from the model's; a grade that agrees with
//! the words is kept as it is.

use crate::knowledge::{squashed, unversioned, Document};
use serde_json::{json, Value};

/// The relevance grades of `documents` after the clear-match rule (applied when the model is
/// `doubted`), and what was overruled.
pub(super) fn relevance(
    documents: &[Document],
    grades: &[bool],
    doubted: bool,
) -> (Vec<bool>, Option<Value>) {
    if !doubted {
        return (grades.to_vec(), None);
    }
    let mut kept = grades.to_vec();
    let overruled = turn(documents, &mut kept, "clear_match", |doc| doc.clear_match);
    (kept, overruled)
}

/// Turns to `yes` each `no` of `grades` whose document `turned` picks, and returns the record
/// of what was overruled under `rule` (none when nothing was turned).
fn turn(
    documents: &[Document],
    grades: &mut [bool],
    rule: &str,
    turned: impl Fn(&Document) -> bool,
) -> Option<Value> {
    record(turns(documents, grades, rule, turned))
}

/// The record of what was overruled: none when nothing was.
fn record(overruled: Vec<Value>) -> Option<Value> {
    (!overruled.is_empty()).then_some(Value::Array(overruled))
}

/// [`turn`], returning one entry per grade turned.
fn turns(
    documents: &[Document],
    grades: &mut [bool],
    rule: &str,
    turned: impl Fn(&Document) -> bool,
) -> Vec<Value> {
    let mut overruled = Vec::new();
    for (i, (doc, yes)) in documents.iter().zip(grades.iter_mut()).enumerate() {
        if !*yes && turned(doc) {
            *yes = true;
            overruled.push(json!({
                "document": i + 1,
                "grade": "no",
                "now": "yes",
                "rule": rule,
            }));
        }
    }
    overruled
}

/// The **answer's passages** rule, where the grades and an answer were written from the same
/// passages at once (speculation) and every passage was graded irrelevant: a passage of a
/// document holding a clear match (`clear_match`: the question's rare words; the passage
/// itself or another of the same file) that the answer stands on (most of its
/// sentences supported, this one supporting some: [`super::attribution`]) is relevant.
/// The model contradicts itself, so its grades are doubted from then on. `grades` are turned
/// in place; the record of what was overruled is returned.
pub(super) fn answers_passages(
    documents: &[Document],
    grades: &mut [bool],
    answer: &str,
    question: &str,
) -> Option<Value> {
    // Only when every passage was graded away: the run would leave the passages its own
    // answer stands on to rewrite the question. (A grading that kept some has chosen among
    // them; an extractive answer quotes whatever it was given.)
    if grades.iter().any(|yes| *yes) || super::floor::says_they_do_not_answer(answer) {
        return None;
    }
    let attributed = super::attribution::attribute(answer, question, documents);
    let report = &attributed.report;
    if report.supported == 0 || report.mostly_unsupported() {
        return None;
    }
    let stands_on: Vec<&str> = (attributed.citations.iter())
        .filter(|c| !c.sentences.is_empty())
        .map(|c| c.url.as_str())
        .collect();
    // The documents (sources, passages of one file together) holding a clear match.
    let clear: Vec<&str> = (documents.iter())
        .filter(|d| d.clear_match)
        .map(|d| source(&d.url))
        .collect();
    turn(documents, grades, "answers_passages", |doc| {
        clear.contains(&source(&doc.url)) && stands_on.contains(&doc.url.as_str())
    })
}

/// The **rewrite's find** rule, where the query is the model's hypothetical answer and every
/// passage it found was graded irrelevant: a passage that is a clear match for that query, or
/// of a document named like the tool the query names in code (`` use the `date` command `` and
/// `date.1/PAGE.txt`, titled `date - print or set the system date and time`), is relevant.
/// `grades` are turned in place; the record of what was overruled is returned.
pub(super) fn rewrites_find(
    documents: &[Document],
    grades: &mut [bool],
    query: &str,
) -> Option<Value> {
    // A grading that kept some has chosen among them.
    if grades.iter().any(|yes| *yes) {
        return None;
    }
    let mut overruled = turns(documents, grades, "rewrites_find", |doc| doc.clear_match);
    let named: Vec<String> = super::research::code_spans(query)
        .into_iter()
        .filter_map(|span| span.split_whitespace().next())
        .map(squashed)
        .filter(|name| name.len() >= 2)
        .collect();
    overruled.extend(turns(documents, grades, "rewrite_names", |doc| {
        document_names(doc).iter().any(|n| named.contains(n))
    }));
    record(overruled)
}

/// The names a document goes by ([`squashed`]): its title's lead (`date` of `date - print or
/// set …`, `thiserror` of `thiserror: derive(Error)`) and the folders of its source without a
/// version or manual section (`arc-swap` of `arc-swap-1.9.5/README.md`, `date` of
/// `date.1/PAGE.txt`).
fn document_names(doc: &Document) -> Vec<String> {
    let lead = doc
        .title
        .split([':', ',', '—'])
        .next()
        .and_then(|t| t.split(" - ").next())
        .unwrap_or("");
    let path = source(&doc.url);
    let path = path.split_once("://").map_or(path, |(_, rest)| rest);
    let folders = path.rsplit_once('/').map_or("", |(folders, _)| folders);
    let mut names = vec![squashed(lead)];
    names.extend(folders.split('/').map(|f| squashed(unversioned(f))));
    names.retain(|n| n.len() >= 2);
    names
}

/// The document a passage's URL names: the URL without its `#passage`.
fn source(url: &str) -> &str {
    url.split_once('#').map_or(url, |(source, _)| source)
}

/// The groundedness grade of `answer` after the sentence rule: an answer graded grounded most
/// of whose sentences no document supports ([`super::attribution`]) is not grounded. Judged
/// sentence by sentence, whatever the model: the words are the evidence.
pub(super) fn grounded(
    answer: &str,
    question: &str,
    documents: &[Document],
    yes: bool,
) -> (bool, Option<Value>) {
    if !yes || documents.is_empty() || super::floor::says_they_do_not_answer(answer) {
        return (yes, None);
    }
    let report = super::attribution::judge(answer, question, documents);
    if !report.mostly_unsupported() {
        return (yes, None);
    }
    let record = json!({
        "grade": "yes",
        "now": "no",
        "rule": "sentences_unsupported",
        "support": format!("{}/{}", report.supported, report.sentences),
    });
    (false, Some(record))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(content: &str, clear_match: bool) -> Document {
        Document {
            clear_match,
            ..Document::passage("1", "Patch canker", "kb://patch-canker.md", content)
        }
    }

    #[test]
    fn a_clear_match_graded_irrelevant_is_relevant_and_recorded() {
        let docs = [doc("a", true), doc("b", false), doc("c", true)];
        // A model that has not shown itself unreliable keeps its verdicts.
        assert_eq!(
            relevance(&docs, &[false, false, true], false),
            (vec![false, false, true], None)
        );
        let (kept, record) = relevance(&docs, &[false, false, true], true);
        assert_eq!(kept, [true, false, true]);
        let record = record.unwrap();
        assert_eq!(record.as_array().unwrap().len(), 1);
        assert_eq!(record[0]["document"], 1);
        assert_eq!(record[0]["rule"], "clear_match");
        // The vector ranking's first is no clear lexical signal: a model's "no" stands.
        let mut nearest = doc("d", false);
        nearest.vector_rank = Some(1);
        assert_eq!(relevance(&[nearest], &[false], true), (vec![false], None));
        // Grades that agree with the words are kept, and nothing is recorded.
        assert_eq!(
            relevance(&docs, &[true, false, true], true),
            (vec![true, false, true], None)
        );
    }

    fn at(url: &str, content: &str, clear_match: bool) -> Document {
        Document {
            clear_match,
            ..Document::passage(url, url, url, content)
        }
    }

    #[test]
    fn only_a_clear_match_the_answer_stands_on_is_taken_back_from_a_no() {
        let canker = "Patch canker is caused by Phytophthora palmivora in wet soil.";
        let borer = "The fruit borer lays its eggs on young durian fruit in the dry season.";
        let q = "What causes patch canker?";
        let answer = "Patch canker is caused by Phytophthora palmivora in wet soil [1]. \
                      The fruit borer lays its eggs on young durian fruit [2].";
        // The answer stands on both passages; only the one holding the question's rare
        // words is turned, the other keeps the model's no.
        for (clear, turned) in [(true, vec![true, false]), (false, vec![false, false])] {
            let docs = [at("kb://a", canker, clear), at("kb://b", borer, false)];
            let mut grades = [false, false];
            let record = answers_passages(&docs, &mut grades, answer, q);
            assert_eq!(grades.to_vec(), turned, "clear match: {clear}");
            assert_eq!(record.is_some(), clear);
        }
        let record = answers_passages(
            &[at("kb://a", canker, true), at("kb://b", borer, true)],
            &mut [false, false],
            answer,
            q,
        )
        .unwrap();
        assert_eq!(record.as_array().unwrap().len(), 2);
        assert_eq!(record[1]["rule"], "answers_passages");
        // Another passage of a clear match's file is of that document: it is turned too.
        let docs = [at("kb://a#1", borer, true), at("kb://a#2", canker, false)];
        let mut grades = [false, false];
        assert!(answers_passages(&docs, &mut grades, answer, q).is_some());
        assert_eq!(grades, [true, true]);
        // A grading that kept a passage has chosen: nothing is turned.
        let mut chose = [false, true];
        let docs = [at("kb://a", canker, true), at("kb://b", borer, true)];
        assert_eq!(answers_passages(&docs, &mut chose, answer, q), None);
        assert_eq!(chose, [false, true]);
    }

    #[test]
    fn a_clear_match_for_the_models_answer_is_kept_when_every_passage_was_rejected() {
        let docs = [doc("a", false), doc("b", true), doc("c", false)];
        let mut grades = [false, false, false];
        let record = rewrites_find(&docs, &mut grades, "an answer").unwrap();
        assert_eq!(grades, [false, true, false]);
        assert_eq!(record.as_array().unwrap().len(), 1);
        assert_eq!(record[0]["document"], 2);
        assert_eq!(record[0]["rule"], "rewrites_find");
        // A grading that kept a passage has chosen: nothing is turned.
        let mut chosen = [true, false, false];
        assert_eq!(rewrites_find(&docs, &mut chosen, ""), None);
        assert_eq!(chosen, [true, false, false]);
        // No clear match: the grades stand.
        let mut none = [false, false];
        assert_eq!(rewrites_find(&docs[..1], &mut none[..1], ""), None);
        assert_eq!(none, [false, false]);
    }

    #[test]
    fn a_document_named_like_the_tool_the_rewrite_names_is_kept_when_every_passage_was_rejected() {
        let page = |title: &str, url: &str| Document::passage("1", title, url, "text");
        let docs = [
            page(
                "wget - the non-interactive network downloader",
                "kb://wget.1/PAGE.txt#5",
            ),
            page(
                "date - print or set the system date — Examples",
                "kb://date.1/PAGE.txt#4",
            ),
            page("ArcSwap", "kb://arc-swap-1.9.5/README.md#1"),
        ];
        let mut grades = [false, false, false];
        let record = rewrites_find(&docs, &mut grades, "use `date -u` command.").unwrap();
        assert_eq!(grades, [false, true, false]);
        assert_eq!(record[0]["document"], 2);
        assert_eq!(record[0]["rule"], "rewrite_names");
        // By its folder without the version: `ArcSwap` names arc-swap.
        let mut grades = [false, false, false];
        rewrites_find(&docs, &mut grades, "The `ArcSwap` type").unwrap();
        assert_eq!(grades, [false, false, true]);
        // A name no document goes by, or one in plain words, turns nothing.
        let mut grades = [false, false, false];
        assert_eq!(rewrites_find(&docs, &mut grades, "use `du` here"), None);
        assert_eq!(
            rewrites_find(&docs, &mut grades, "use the date command"),
            None
        );
        assert_eq!(grades, [false, false, false]);
    }

    #[test]
    fn an_answer_without_support_graded_grounded_is_not_grounded() {
        let docs = [doc(
            "Patch canker is caused by Phytophthora palmivora; drain the soil and prune.",
            false,
        )];
        let q = "What causes patch canker?";
        let invented = "Bananas ripen faster inside paper bags with apples nearby [1].";
        let (yes, record) = grounded(invented, q, &docs, true);
        assert!(!yes);
        let record = record.unwrap();
        assert_eq!(record["rule"], "sentences_unsupported");
        assert_eq!(record["support"], "0/1");
        // Supported, short, a refusal, or already graded no: left as graded.
        let supported = "Phytophthora palmivora causes it; drain the soil and prune [1].";
        assert_eq!(grounded(supported, q, &docs, true), (true, None));
        assert_eq!(grounded("Bananas ripen [1].", q, &docs, true), (true, None));
        let refusal = "The documents do not mention bananas, apples or paper bags.";
        assert_eq!(grounded(refusal, q, &docs, true), (true, None));
        assert_eq!(grounded(invented, q, &docs, false), (false, None));
    }
}
