//! The embedded offline provider: extractive answers and lexical grading, no network.
//!
//! It reads only [`ChatRequest::inputs`] (the typed question, documents and answer), never
//! the prose prompt, and is fully deterministic. Its rules, per task:
//!
//! - `route_query`: `web_search` when the question names something time-bound (latest, today,
//!   news, prices, ...); `llm_internal` for small talk or arithmetic with no domain words;
//!   `kg_retrieval` otherwise.
//! - `grade_documents`: `yes` when the knowledge base ranked a document as a clear match (see
//!   [`Document::clear_match`]: first by BM25 with a clear lead, or near the top of both the
//!   BM25 and the vector ranking) or of one of the vector ranking's first three documents
//!   ([`Document::vector_rank`]), so a passage that says the same thing in other words is kept;
//!   otherwise `yes` when the documents contain at least half of the question's content stems
//!   (at most three needed).
//! - `generate_answer`: [`extractive_answer`].
//! - `grade_hallucinations`: `yes` when every answer sentence has at least 80% of its content
//!   stems in the documents.
//! - `grade_answer`: `yes` when the answer shares a content stem with the question and is not
//!   one of the provider's "cannot answer" messages.
//! - `refine_query`: the question's content words, deduplicated (it cannot paraphrase).
//! - `contextualize_question`: a follow-up that refers back carries the previous turn's
//!   subject (see `contextualize`).

use super::lexical::{content_words, sentences, shorten, stem, stems, strip_markers, words};
use super::{ChatModel, ChatRequest, Completion, DataSource, LlmError, Task};
use crate::knowledge::Document;
use async_trait::async_trait;
use serde_json::json;
use std::collections::HashSet;

/// The answer when there are no documents to answer from.
pub const NO_KNOWLEDGE_ANSWER: &str =
    "The offline provider has no knowledge source for this question, so it cannot answer it.";

/// The answer when the documents share no words with the question.
pub(crate) const NO_MATCH_ANSWER: &str =
    "None of the retrieved passages address this question, so the offline provider cannot answer it.";

/// Most sentences in an extractive answer.
const MAX_SENTENCES: usize = 4;
/// Longest sentence quoted, in characters; longer ones are cut at a word boundary.
const MAX_SENTENCE_CHARS: usize = 600;
/// Share of an answer sentence's content stems that must appear in the documents.
const GROUNDED_SHARE: f64 = 0.8;

/// Words that make a question time-bound (answered by web search).
#[rustfmt::skip]
const TIME_BOUND_WORDS: &[&str] = &[
    "latest", "today", "tonight", "yesterday", "tomorrow", "news", "headlines", "breaking",
    "currently", "price", "prices", "pricing",
];
/// Answers from the retrieved passages without any model.
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineModel;

#[async_trait]
impl ChatModel for OfflineModel {
    async fn complete(&self, request: &ChatRequest<'_>) -> Result<Completion, LlmError> {
        let inputs = &request.inputs;
        let reply = match request.task {
            Task::RouteQuery => json!({ "data_source": route(inputs.question).as_str() }),
            Task::GradeDocuments => {
                json!({ "binary_score": yes_no(relevant(inputs.question, inputs.documents)) })
            }
            Task::GradeHallucinations => json!({
                "binary_score": yes_no(grounded(inputs.answer.unwrap_or(""), inputs.documents))
            }),
            Task::GradeAnswer => json!({
                "binary_score": yes_no(useful(inputs.question, inputs.answer.unwrap_or("")))
            }),
            Task::RefineQuery => json!({ "search_words": refine(inputs.question) }),
            // The answer is plain text, as every provider writes it.
            Task::GenerateAnswer => {
                return Ok(Completion::new(extractive_answer(
                    inputs.question,
                    inputs.documents,
                )))
            }
            Task::ContextualizeQuestion => json!({
                "standalone_question": super::contextualize::standalone(inputs.question, inputs.documents)
            }),
        };
        // No tokenizer here: the caller estimates the tokens and marks them as estimated.
        Ok(Completion::new(reply.to_string()))
    }

    fn name(&self) -> &'static str {
        "offline"
    }
}

/// An extractive answer: the 2–4 document sentences that share the most content words with
/// the question, in document order, each followed by `[n]` (the 1-based document index).
///
/// Only one sentence is given when only one shares any word with the question. Without
/// documents the answer is [`NO_KNOWLEDGE_ANSWER`]; when no sentence shares a word with the
/// question it is [`NO_MATCH_ANSWER`]. Used by the offline provider and by the workflow for a
/// best-effort answer when a limit stops a run before any generation.
pub fn extractive_answer(question: &str, documents: &[Document]) -> String {
    if documents.is_empty() {
        return NO_KNOWLEDGE_ANSWER.to_owned();
    }
    let wanted = stems(question);
    // (score, document index, sentence index, text)
    let mut scored: Vec<(usize, usize, usize, String)> = Vec::new();
    for (d, document) in documents.iter().enumerate() {
        for (s, sentence) in sentences(&document.content).into_iter().enumerate() {
            if sentence.split_whitespace().count() < 4 {
                continue; // labels like "Drainage." say nothing on their own
            }
            let score = stems(&sentence).intersection(&wanted).count();
            if score > 0 {
                scored.push((score, d, s, sentence));
            }
        }
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    // A sentence that several documents share (a README copied into companion crates) is
    // quoted once, from the first of them.
    let mut seen = HashSet::new();
    scored.retain(|s| seen.insert(s.3.split_whitespace().collect::<Vec<_>>().join(" ")));
    let Some(best) = scored.first().map(|s| s.0) else {
        return NO_MATCH_ANSWER.to_owned();
    };
    // Two sentences whenever possible; a third and fourth only when they are strong.
    let strong = best.div_ceil(2);
    let mut picked: Vec<_> = scored
        .into_iter()
        .enumerate()
        .filter(|(rank, s)| *rank < 2 || s.0 >= strong)
        .map(|(_, s)| s)
        .take(MAX_SENTENCES)
        .collect();
    picked.sort_by(|a, b| a.1.cmp(&b.1).then(a.2.cmp(&b.2)));
    picked
        .iter()
        .map(|(_, d, _, text)| format!("{} [{}]", shorten(text, MAX_SENTENCE_CHARS), d + 1))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Where to answer from; see the module docs.
fn route(question: &str) -> DataSource {
    let raw: Vec<String> = words(question).collect();
    let has_phrase = |a: &str, b: &str| raw.windows(2).any(|w| w[0] == a && w[1] == b);
    let time_bound = raw.iter().any(|w| TIME_BOUND_WORDS.contains(&w.as_str()))
        || has_phrase("right", "now")
        || has_phrase("this", "week")
        || has_phrase("current", "events");
    if time_bound {
        return DataSource::WebSearch;
    }
    if super::small_talk::needs_no_documents(question) {
        DataSource::LlmInternal
    } else {
        DataSource::KgRetrieval
    }
}

/// `grade_documents`: a clear match of the retrieval or a passage among the nearest the
/// question by meaning, or enough of the question's content stems occur in the documents.
fn relevant(question: &str, documents: &[Document]) -> bool {
    if documents.iter().any(|d| d.clear_match || d.is_near()) {
        return true;
    }
    let wanted = stems(question);
    if wanted.is_empty() {
        return false;
    }
    let found = document_stems(documents);
    let overlap = wanted.intersection(&found).count();
    overlap >= wanted.len().div_ceil(2).min(3)
}

/// `grade_hallucinations`: every answer sentence is mostly made of document words.
fn grounded(answer: &str, documents: &[Document]) -> bool {
    if is_canned(answer) {
        return true; // claims nothing
    }
    let answer = strip_markers(answer);
    let parts = sentences(&answer);
    if parts.is_empty() {
        return false;
    }
    let found = document_stems(documents);
    parts.iter().all(|sentence| {
        let claimed = stems(sentence);
        let supported = claimed.intersection(&found).count();
        claimed.is_empty() || supported as f64 >= GROUNDED_SHARE * claimed.len() as f64
    })
}

/// `grade_answer`: the answer talks about the question and is a real answer.
fn useful(question: &str, answer: &str) -> bool {
    !is_canned(answer) && !stems(question).is_disjoint(&stems(&strip_markers(answer)))
}

/// `refine_query`: content words, first spelling of each stem kept.
fn refine(question: &str) -> String {
    let mut seen = HashSet::new();
    let kept: Vec<String> = content_words(question)
        .filter(|w| seen.insert(stem(w)))
        .collect();
    if kept.is_empty() {
        question.trim().to_owned()
    } else {
        kept.join(" ")
    }
}

fn document_stems(documents: &[Document]) -> HashSet<String> {
    documents
        .iter()
        .flat_map(|d| stems(&d.title).into_iter().chain(stems(&d.content)))
        .collect()
}

fn is_canned(answer: &str) -> bool {
    let answer = answer.trim();
    answer == NO_KNOWLEDGE_ANSWER || answer == NO_MATCH_ANSWER
}

fn yes_no(yes: bool) -> &'static str {
    if yes {
        "yes"
    } else {
        "no"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ask, BinaryScore, Refined, RouteDecision, TaskInputs};
    use std::time::Duration;

    const PATCH_CANKER: &str = "Patch canker is the most destructive disease of durian (Durio \
        zibethinus) in most growing regions of Southeast Asia and northern Australia. It attacks \
        the bark of the trunk and main limbs, and an untreated tree can be girdled and killed \
        within a few seasons.\n\nThe disease is caused by Phytophthora palmivora, a soil-borne \
        oomycete (water mould). Although it looks and behaves like a fungus, it belongs to a \
        different group of organisms, which is why many ordinary fungicides do not control it.";
    const PINK_DISEASE: &str = "Pink disease is caused by the fungus Erythricium salmonicolor. \
        It attacks branches in the upper canopy during long wet spells. A pink crust forms on \
        the bark of infected branches.";
    const PHOSPHONATE: &str = "- **Phosphonate trunk injection.** Potassium phosphonate \
        injected into the trunk is the mainstay of control against patch canker. It moves \
        through the tree in both directions and strengthens the tree's own defence.";

    fn doc(title: &str, content: &str) -> Document {
        Document::passage(
            title.to_lowercase(),
            title,
            format!("kb://{title}"),
            content,
        )
    }

    async fn call<T: serde::de::DeserializeOwned>(
        task: Task,
        question: &str,
        documents: &[Document],
        answer: Option<&str>,
    ) -> T {
        let request = ChatRequest {
            task,
            messages: Vec::new(),
            inputs: TaskInputs {
                question,
                documents,
                answer,
            },
            timeout: Duration::from_secs(1),
            max_tokens: 1024,
            stop: &[],
        };
        ask(&OfflineModel, &request).await.unwrap()
    }

    #[test]
    fn answer_picks_the_cause_sentence_with_its_citation() {
        let docs = [
            doc("Patch canker", PATCH_CANKER),
            doc("Pink disease", PINK_DISEASE),
        ];
        let answer = extractive_answer("What pathogen causes patch canker in durian?", &docs);
        assert_eq!(
            answer,
            "Patch canker is the most destructive disease of durian (Durio zibethinus) in most \
             growing regions of Southeast Asia and northern Australia. [1] The disease is caused \
             by Phytophthora palmivora, a soil-borne oomycete (water mould). [1]"
        );
    }

    #[test]
    fn answer_cites_each_sentence_by_document_index_in_document_order() {
        let docs = [
            doc("Pink disease", PINK_DISEASE),
            doc("Phosphonate", PHOSPHONATE),
        ];
        let answer = extractive_answer("How is patch canker controlled with phosphonate?", &docs);
        assert_eq!(
            answer,
            "Potassium phosphonate injected into the trunk is the mainstay of control against \
             patch canker. [2]"
        );
        let answer = extractive_answer("What causes pink disease on branches?", &docs);
        assert!(answer
            .starts_with("Pink disease is caused by the fungus Erythricium salmonicolor. [1]"));
        assert!(answer.contains("A pink crust forms on the bark of infected branches. [1]"));
        assert!(!answer.contains("[2]"));
    }

    #[test]
    fn answer_without_documents_or_overlap_says_so() {
        assert_eq!(
            extractive_answer("What causes patch canker?", &[]),
            NO_KNOWLEDGE_ANSWER
        );
        let docs = [doc("Pink disease", PINK_DISEASE)];
        assert_eq!(
            extractive_answer("Who wrote Hamlet?", &docs),
            NO_MATCH_ANSWER
        );
    }

    #[test]
    fn routes_by_simple_documented_rules() {
        assert_eq!(
            route("What causes patch canker in durian?"),
            DataSource::KgRetrieval
        );
        assert_eq!(
            route("What is the latest durian export news?"),
            DataSource::WebSearch
        );
        assert_eq!(
            route("Durian price today in Bangkok"),
            DataSource::WebSearch
        );
        assert_eq!(
            route("Why does fruit rot spread in wet weather?"),
            DataSource::KgRetrieval
        );
        assert_eq!(route("Hello, how are you?"), DataSource::LlmInternal);
        assert_eq!(route("What is 2 + 2?"), DataSource::LlmInternal);
        assert_eq!(route("what is two plus three"), DataSource::LlmInternal);
    }

    #[test]
    fn grades_documents_by_content_word_overlap() {
        let canker = [doc("Patch canker", PATCH_CANKER)];
        let pink = [doc("Pink disease", PINK_DISEASE)];
        assert!(relevant("What causes patch canker?", &canker));
        assert!(relevant(
            "Which organisms cause cankers on durian trunks?",
            &canker
        ));
        assert!(!relevant("How do I make bread at home?", &canker));
        assert!(!relevant("What causes patch canker?", &pink));
        assert!(!relevant("What is it?", &canker));
    }

    #[test]
    fn a_clear_match_of_the_retrieval_is_kept_whatever_its_words() {
        // The question and the passage share no content word.
        let question = "Why is amber gum weeping from my tree?";
        let mut doc = doc("Patch canker", PATCH_CANKER);
        assert!(!relevant(question, std::slice::from_ref(&doc)));
        doc.clear_match = true;
        assert!(relevant(question, std::slice::from_ref(&doc)));
        // A passage of one of the vector ranking's first three documents too.
        doc.clear_match = false;
        doc.vector_rank = Some(3);
        assert!(relevant(question, std::slice::from_ref(&doc)));
    }

    #[test]
    fn an_extract_quoting_code_is_grounded_in_it() {
        // The requests README's doctest, longer than a quoted sentence, so the quote is cut
        // inside its fence (python set, real-model tier). No digit 1 in it: a marker `[1]`
        // left in the answer would be a word the documents do not have.
        let lines = ">>> r = requests.get('https://httpbin.org/get')\n>>> r.json()[0].keys()\n";
        let readme = format!(
            "```python\n{}```\n\nRequests allows you to send HTTP requests extremely easily.",
            lines.repeat(12)
        );
        let docs = [doc("requests", &readme)];
        let extracted =
            extractive_answer("How do I send an HTTP GET request with requests?", &docs);
        assert!(extracted.starts_with("```python"), "{extracted}");
        assert_eq!(
            extracted.matches("```").count(),
            1,
            "cut inside: {extracted}"
        );
        assert!(grounded(&extracted, &docs), "{extracted}");
    }

    #[test]
    fn a_sentence_several_documents_share_is_quoted_once() {
        // hashbrown's README, copied into two more crates of the crates set.
        let copy = "This crate is a Rust port of Google's SwissTable hash map. It is fast.";
        let docs = [doc("a", copy), doc("b", copy), doc("c", copy)];
        let answer = extractive_answer("Which crate is the Rust port of SwissTable?", &docs);
        assert_eq!(
            answer,
            "This crate is a Rust port of Google's SwissTable hash map. [1]"
        );
    }

    #[test]
    fn grounded_when_every_sentence_comes_from_the_documents() {
        let docs = [doc("Patch canker", PATCH_CANKER)];
        let extracted = extractive_answer("What causes patch canker?", &docs);
        assert!(grounded(&extracted, &docs));
        assert!(grounded(NO_KNOWLEDGE_ANSWER, &[]));
        assert!(!grounded(
            "Patch canker is caused by Phytophthora palmivora. It is cured by eating garlic \
             and singing to the tree every morning.",
            &docs
        ));
        assert!(!grounded("Patch canker is a durian disease.", &[]));
        assert!(!grounded("", &docs));
    }

    #[test]
    fn useful_when_on_topic_and_not_a_refusal() {
        assert!(useful(
            "What causes patch canker?",
            "It is caused by Phytophthora palmivora [1]."
        ));
        assert!(!useful("What causes patch canker?", NO_KNOWLEDGE_ANSWER));
        assert!(!useful("What causes patch canker?", "Bananas are yellow."));
    }

    #[test]
    fn refine_keeps_distinct_content_words() {
        assert_eq!(
            refine("What are the causes of patch canker and what causes cankers?"),
            "causes patch canker"
        );
        assert_eq!(refine("What is it?"), "What is it?");
    }

    #[tokio::test]
    async fn replies_match_the_design_field_shapes() {
        let docs = [doc("Patch canker", PATCH_CANKER)];
        let q = "What causes patch canker?";
        let route: RouteDecision = call(Task::RouteQuery, q, &[], None).await;
        assert_eq!(route.data_source, DataSource::KgRetrieval);
        let graded: BinaryScore = call(Task::GradeDocuments, q, &docs, None).await;
        assert!(graded.yes());
        let generated = extractive_answer(q, &docs);
        let answer = Task::GenerateAnswer;
        let request = ChatRequest {
            task: answer,
            messages: Vec::new(),
            inputs: TaskInputs {
                question: q,
                documents: &docs,
                answer: None,
            },
            timeout: Duration::from_secs(1),
            max_tokens: 1024,
            stop: &[],
        };
        let written = OfflineModel.complete(&request).await.unwrap();
        assert_eq!(written.content, generated, "the answer is plain text");
        assert!(generated.contains("Phytophthora palmivora"));
        let grounded: BinaryScore =
            call(Task::GradeHallucinations, q, &docs, Some(&generated)).await;
        assert!(grounded.yes());
        let useful: BinaryScore = call(Task::GradeAnswer, q, &docs, Some(&generated)).await;
        assert!(useful.yes());
        let refined: Refined = call(Task::RefineQuery, q, &[], None).await;
        assert_eq!(refined.refined_question, "causes patch canker");
    }
}
