//! Grades overruled by a clear lexical signal. A model that cannot follow its instructions
//! cannot grade either, so a grade that contradicts what the words plainly show is recorded in
//! the step's details (`overruled`) and replaced, by two rules:
//!
//! - **clear match**: a document the retrieval marked a clear match (`clear_match`: it holds
//!   the question's rare words) is relevant, whatever its grade says;
//! - **no support**: an answer judged on enough of its own words ([`MIN_JUDGED_STEMS`] content
//!   words beyond the question's), fewer than a third of which occur in its documents, is not
//!   grounded, whatever its grade says; an answer that says the documents do not answer is
//!   left to its grade.
//!
//! Each rule only ever turns a grade the other way from the model's; a grade that agrees with
//! the words is kept as it is.

use super::floor::{new_stems, support, MIN_JUDGED_STEMS};
use crate::search::Document;
use serde_json::{json, Value};

/// The relevance grades of `documents` after the clear-match rule, and what was overruled.
pub(super) fn relevance(documents: &[Document], grades: &[bool]) -> (Vec<bool>, Option<Value>) {
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

/// The groundedness grade of `answer` after the no-support rule, and what was overruled.
pub(super) fn grounded(
    answer: &str,
    question: &str,
    documents: &[Document],
    yes: bool,
) -> (bool, Option<Value>) {
    if !yes || documents.is_empty() || super::floor::says_they_do_not_answer(answer) {
        return (yes, None);
    }
    let judged = new_stems(answer, question);
    let all: Vec<&Document> = documents.iter().collect();
    let found = support(&judged, &all);
    if judged.len() < MIN_JUDGED_STEMS || found * 3 >= judged.len() {
        return (yes, None);
    }
    let record = json!({
        "grade": "yes",
        "now": "no",
        "rule": "no_support",
        "support": format!("{found}/{}", judged.len()),
    });
    (false, Some(record))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::DocKind;

    fn doc(content: &str, clear_match: bool) -> Document {
        Document {
            id: "1".into(),
            title: "Patch canker".into(),
            url: "kb://patch-canker.md".into(),
            content: content.into(),
            score: 1.0,
            kind: DocKind::Episode,
            clear_match,
            from_graph: false,
            vector_rank: None,
        }
    }

    #[test]
    fn a_clear_match_graded_irrelevant_is_relevant_and_recorded() {
        let docs = [doc("a", true), doc("b", false), doc("c", true)];
        let (kept, record) = relevance(&docs, &[false, false, true]);
        assert_eq!(kept, [true, false, true]);
        let record = record.unwrap();
        assert_eq!(record.as_array().unwrap().len(), 1);
        assert_eq!(record[0]["document"], 1);
        assert_eq!(record[0]["rule"], "clear_match");
        // The vector ranking's first is no clear lexical signal: a model's "no" stands.
        let mut nearest = doc("d", false);
        nearest.vector_rank = Some(1);
        assert_eq!(relevance(&[nearest], &[false]), (vec![false], None));
        // Grades that agree with the words are kept, and nothing is recorded.
        assert_eq!(
            relevance(&docs, &[true, false, true]),
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
        assert_eq!(record["rule"], "no_support");
        assert_eq!(record["support"], "0/8");
        // Supported, short, a refusal, or already graded no: left as graded.
        let supported = "Phytophthora palmivora causes it; drain the soil and prune [1].";
        assert_eq!(grounded(supported, q, &docs, true), (true, None));
        assert_eq!(grounded("Bananas ripen [1].", q, &docs, true), (true, None));
        let refusal = "The documents do not mention bananas, apples or paper bags.";
        assert_eq!(grounded(refusal, q, &docs, true), (true, None));
        assert_eq!(grounded(invented, q, &docs, false), (false, None));
    }
}
