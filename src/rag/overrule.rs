//! Grades overruled by a clear lexical signal, and when. A grade that contradicts what the
//! words plainly show is recorded in the step's details (`overruled`) and replaced, by three
//! rules:
//!
//! - **clear match**, only against a model that has shown itself unreliable in this run (an
//!   answer of its under the floor: [`RagState::model_doubted`](super::RagState)): a document
//!   the retrieval marked a clear match (`clear_match`: it holds the question's rare words) is
//!   relevant, whatever its grade says. A model that has not shown that keeps its verdicts, so
//!   a capable grader's `no` drives the rewrite loop and the web fallback as designed;
//! - **answer's passages**, when the grades and an answer were written from the same passages
//!   at once (speculation) and every passage was graded irrelevant: a passage that the
//!   answer, written from it and passing the floor, stands on is relevant, and the model is
//!   doubted from then on (it contradicts itself: one of its two verdicts is wrong, and the
//!   words side with the answer);
//! - **sentences unsupported**, whatever the model: an answer graded grounded most of whose
//!   sentences no document supports ([`super::attribution`]) is not grounded; an answer that
//!   says the documents do not answer is left to its grade.
//!
//! Each rule only ever turns a grade the other way from the model's; a grade that agrees with
//! the words is kept as it is.

use crate::knowledge::Document;
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
    let mut overruled = Vec::new();
    let kept = documents
        .iter()
        .zip(grades)
        .enumerate()
        .map(|(i, (doc, yes))| {
            if !yes && doc.clear_match {
                overruled.push(json!({
                    "document": i + 1,
                    "grade": "no",
                    "now": "yes",
                    "rule": "clear_match",
                }));
                return true;
            }
            *yes
        })
        .collect();
    (
        kept,
        (!overruled.is_empty()).then_some(Value::Array(overruled)),
    )
}

/// The **answer's passages** rule, where the grades and an answer were written from the same
/// passages at once (speculation) and every passage was graded irrelevant: a passage the
/// answer stands on (most of its sentences supported, this one supporting some:
/// [`super::attribution`]) is relevant.
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
    let mut overruled = Vec::new();
    for (i, (doc, yes)) in documents.iter().zip(grades.iter_mut()).enumerate() {
        if !*yes && stands_on.contains(&doc.url.as_str()) {
            *yes = true;
            overruled.push(json!({
                "document": i + 1,
                "grade": "no",
                "now": "yes",
                "rule": "answers_passages",
            }));
        }
    }
    (!overruled.is_empty()).then_some(Value::Array(overruled))
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
