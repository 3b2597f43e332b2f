//! Research for an answer written from memory: without documents (the run wanted sources and
//! found none it could use), or over documents that do not hold what it says (under the
//! floor). The knowledge base is searched once more, with the answer's own words instead of
//! the question's, and the answer is asked for again from the passages that support it: the
//! "research" stage of RARR (Gao et al., 2023, "Retrofit Attribution using Research and
//! Revision"), with the service's lexical support check ([`super::attribution`]) as the judge
//! (it needs no model call), and the model's second answer as the revision.
//!
//! It bridges the gap between a user's words and a document's: asked "how do I get the number
//! of lines in a text file?", a model names `wc -l` from memory, and `wc`'s manual page, which
//! the question's words never found, holds what the answer says.
//!
//! Passages are found only when most of the answer's judged sentences are supported
//! ([`super::attribution::Report::mostly_unsupported`]), and a passage a grading of this run
//! judged irrelevant is never one of them: a grader's `no` stands.

use super::attribution::attribute;
use super::kb_search::search;
use super::{RagGraph, RagState};
use crate::engine::StepCtx;
use crate::knowledge::Document;

/// The longest query taken from an answer, in characters (a question may have 2,000).
const MAX_QUERY_CHARS: usize = 1_000;

/// The passages of a search with `answer` that support it, or `None` when there are none, or
/// they support less than half of its judged sentences, or the search failed (the answer then
/// stays without sources, as before the search).
pub(super) async fn sources_for_answer(
    graph: &RagGraph,
    state: &RagState,
    ctx: &StepCtx<'_>,
    answer: &str,
) -> Option<Vec<Document>> {
    let query = query_of(answer);
    if query.is_empty() {
        return None;
    }
    let found = match search(graph, state, ctx, &query).await {
        Ok(searched) => searched.documents,
        Err(error) => {
            tracing::warn!(%error, "the search with the answer failed: it stays without sources");
            return None;
        }
    };
    supporting(answer, &state.request.question, found, &state.rejected)
}

/// `answer` as a search query: its text without citation markers, cut at a word boundary.
fn query_of(answer: &str) -> String {
    let text = crate::llm::strip_markers(answer);
    let words = text.split_whitespace();
    let mut query = String::new();
    for word in words {
        if query.len() + word.len() + 1 > MAX_QUERY_CHARS {
            break;
        }
        if !query.is_empty() {
            query.push(' ');
        }
        query.push_str(word);
    }
    query
}

/// Of `found`, the passages no grading rejected that support a sentence of `answer`, when
/// they support most of its judged sentences.
fn supporting(
    answer: &str,
    question: &str,
    found: Vec<Document>,
    rejected: &[u64],
) -> Option<Vec<Document>> {
    let found: Vec<Document> = found
        .into_iter()
        .filter(|doc| !rejected.contains(&super::state::passage_key(doc)))
        .collect();
    let attributed = attribute(answer, question, &found);
    let report = &attributed.report;
    if report.supported == 0 || report.mostly_unsupported() {
        return None;
    }
    let cited: Vec<&str> = attributed
        .citations
        .iter()
        .map(|c| c.url.as_str())
        .collect();
    Some(
        found
            .into_iter()
            .filter(|doc| cited.contains(&doc.url.as_str()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(id: &str, url: &str, content: &str) -> Document {
        Document::passage(id, url, url, content)
    }

    const QUESTION: &str = "How do I get the number of lines in a text file?";
    const ANSWER: &str = "Use the `wc` command with its `-l` option to print the newline count \
                          of the file. For example, `wc -l notes.txt` prints 12 notes.txt.";

    fn wc() -> Document {
        page(
            "1",
            "kb://wc.1/PAGE.txt#1",
            "wc - print newline, word, and byte counts for each file. -l, --lines print the \
             newline counts. Print newline, word, and byte counts for each FILE.",
        )
    }

    fn tr() -> Document {
        page(
            "2",
            "kb://tr.1/PAGE.txt#1",
            "tr - translate or delete characters from standard input.",
        )
    }

    #[test]
    fn the_passages_that_support_the_answer_are_its_sources_and_the_others_are_not() {
        let found = supporting(ANSWER, QUESTION, vec![tr(), wc()], &[]).unwrap();
        let urls: Vec<&str> = found.iter().map(|d| d.url.as_str()).collect();
        assert_eq!(urls, ["kb://wc.1/PAGE.txt#1"]);
    }

    #[test]
    fn a_passage_a_grading_rejected_is_never_a_source() {
        let rejected = [super::super::state::passage_key(&wc())];
        assert_eq!(
            supporting(ANSWER, QUESTION, vec![tr(), wc()], &rejected),
            None
        );
    }

    #[test]
    fn an_answer_the_passages_mostly_do_not_support_keeps_no_sources() {
        let answer = "Open the spreadsheet program and read the row number at the bottom. \
                      Spreadsheets show the count of rows in their status bar.";
        assert_eq!(supporting(answer, QUESTION, vec![tr(), wc()], &[]), None);
    }

    #[test]
    fn the_query_is_the_answer_without_markers_and_bounded() {
        assert_eq!(
            query_of("Use `wc -l` [1]. It counts [2]."),
            "Use `wc -l` . It counts ."
        );
        let long = "word ".repeat(1_000);
        let query = query_of(&long);
        assert!(query.len() <= MAX_QUERY_CHARS, "{}", query.len());
        assert!(query.ends_with("word"));
    }
}
