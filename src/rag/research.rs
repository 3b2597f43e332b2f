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
use super::sentences::units;
use super::{RagGraph, RagState};
use crate::engine::StepCtx;
use crate::knowledge::Document;

/// The longest query taken from an answer, in characters (a question may have 2,000).
const MAX_QUERY_CHARS: usize = 1_000;
/// The content stems a model's text adds to the question before its search is cut there.
const MIN_LEAD_STEMS: usize = 3;

/// The passages of two searches, with `answer` and with its lead ([`query_of`]), that support
/// it, or `None` when there are none, or they support less than half of its judged sentences,
/// or a search failed (the answer then stays without sources, as before the search), or the
/// answer opens by declining to answer.
pub(super) async fn sources_for_answer(
    graph: &RagGraph,
    state: &RagState,
    ctx: &StepCtx<'_>,
    answer: &str,
) -> Option<Vec<Document>> {
    if super::floor::opens_declining(answer) {
        // It says it cannot answer: there is nothing it claims to search for (the offline
        // provider's answer without documents found `icu_provider`'s "DataProvider").
        return None;
    }
    // Two searches: the whole answer (what its claims share with a passage) and its lead
    // (what it names), the first's passages first; a passage found twice counts once.
    let whole = bounded(&crate::llm::strip_markers(answer));
    let lead = query_of(answer, &state.request.question);
    let mut found: Vec<Document> = Vec::new();
    let queries = if lead == whole {
        vec![whole]
    } else {
        vec![whole, lead]
    };
    for query in queries.into_iter().filter(|q| !q.is_empty()) {
        match search(graph, state, ctx, &query).await {
            Ok(searched) => {
                for doc in searched.documents {
                    if !found.iter().any(|d| d.url == doc.url) {
                        found.push(doc);
                    }
                }
            }
            Err(error) => {
                tracing::warn!(%error, "the search with the answer failed: it stays without sources");
                return None;
            }
        }
    }
    supporting(answer, &state.request.question, found, &state.rejected)
}

/// A model's text (an answer, or a rewrite written as the first sentence of a document that
/// answers) as a search query: the words its first sentences add to the question, where it
/// names what to use ("…, you can use the `date` command" -> "use `date` command"), and the
/// code spans of the rest (`wc -l`), without citation markers, cut at a word boundary. Not the whole text: searched
/// with a paragraph of a small model's prose, BM25 ranks the pages sharing most of its common
/// words (a memory answer naming `split` found `dpkg-split`'s page, and a rewrite naming
/// `date` found the date page third, after agetty's and tune2fs's).
pub(super) fn query_of(text: &str, question: &str) -> String {
    let asked = crate::llm::stems(question);
    // Its words the question does not hold: the question's own words drown a name among
    // the pages they match (measured on the man pages: "…, you can use the `du` command"
    // found `zipsplit`, `zip` and `top`; "`du` command" finds `du` first). Sentence after
    // sentence until they add [`MIN_LEAD_STEMS`] (a first sentence "Yes, there is a keyed
    // hash for HashMap that …" adds only "Yes"; the next names `foldhash`).
    let mut words: Vec<String> = Vec::new();
    let mut added: std::collections::HashSet<String> = std::collections::HashSet::new();
    for unit in units(text).iter().filter(|u| !u.code) {
        if added.len() >= MIN_LEAD_STEMS {
            break;
        }
        let clean = crate::llm::strip_markers(&text[unit.span.clone()]);
        for word in clean.split_whitespace() {
            let own = crate::llm::stems(word);
            if !own.is_empty() && own.iter().all(|s| !asked.contains(s)) {
                words.push(word.to_owned());
                added.extend(own);
            }
        }
    }
    if words.is_empty() {
        return bounded(&crate::llm::strip_markers(text));
    }
    let mut query = words.join(" ");
    for span in code_spans(text) {
        if !query.contains(span) {
            query.push(' ');
            query.push_str(span);
        }
    }
    bounded(&query)
}

/// The inline code spans of `text` (`` `wc -l` `` -> `wc -l`), in order; fenced blocks are not
/// inline spans.
pub(super) fn code_spans(text: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("```")) {
        // Between the 1st and 2nd backtick, the 3rd and 4th, …: the odd parts.
        for inside in line.split('`').skip(1).step_by(2) {
            let inside = inside.trim();
            if !inside.is_empty() && !spans.contains(&inside) {
                spans.push(inside);
            }
        }
    }
    spans
}

/// `text` on one line, cut at a word boundary to [`MAX_QUERY_CHARS`].
fn bounded(text: &str) -> String {
    let mut query = String::new();
    for word in text.split_whitespace() {
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
    fn the_query_is_what_the_first_sentence_adds_to_the_question_and_the_code_it_names() {
        assert_eq!(
            query_of(
                "How do I get the number of lines in a text file? You can use the `wc` \
                 command [1]. It prints counts; `wc -l notes.txt` prints lines [2].",
                QUESTION
            ),
            "use `wc` command wc -l notes.txt"
        );
        // A first sentence that adds too little ("Yes"): the next sentences too.
        assert_eq!(
            query_of(
                "Yes, there is a keyed hash for HashMap that is fast but still resists hash \
                 flooding attacks. It is called foldhash [1].",
                "Is there a keyed hash for HashMap that is fast but still resists hash \
                 flooding attacks?"
            ),
            "Yes, called foldhash"
        );
        // Without a sentence that adds a word, the whole text, bounded.
        let long = "word ".repeat(1_000);
        let query = query_of(&long, "word");
        assert!(query.len() <= MAX_QUERY_CHARS, "{}", query.len());
        assert!(query.ends_with("word"));
    }
}
