//! The workflow state checkpointed after every step: typed counters, never string keys.

use super::attribution::{Attributed, Citation};
use super::quoted::Quoted;
use super::speculating::Speculating;
use super::{Caller, RunRequest};
use crate::engine::Limit;
use crate::knowledge::Document;
use crate::llm::DataSource;
use crate::search::RetrievalMode;
use serde::{Deserialize, Serialize};

/// A cited source with the text of its passage (what the playground shows when a citation is
/// opened).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct CitedPassage {
    /// The citation's URL, or `kb://` path.
    pub(crate) url: String,
    /// The citation's title.
    pub(crate) title: String,
    /// The passage as the model was given it.
    pub(crate) text: String,
}

/// The run and step a run was forked from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkedFrom {
    /// The original run.
    pub run_id: String,
    /// The step it was forked after (`0`: before the first).
    pub step: u32,
}

/// Why an answer is best-effort rather than complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BestEffortReason {
    /// The answer was still not grounded after `MAX_REGENERATIONS` regenerations.
    MaxRegenerations,
    /// The answer was still not useful after `MAX_RETRIES` query rewrites.
    #[serde(rename = "max_retries")]
    MaxQueryRewrites,
    /// No relevant documents were found and web search gave nothing to answer from.
    NoSources,
    /// The answer reached its output cap (`LLM_MAX_ANSWER_TOKENS`) and is cut short.
    AnswerLength,
    /// The model could not answer; the answer is quoted from the documents found.
    ModelUnavailable,
    /// The model's answers stayed under the floor (an echo of the prompt, no content, a loop,
    /// a citation of a document it was not given, nothing shared with its documents); the
    /// answer is quoted from the documents found.
    ModelUnusable,
    /// An engine limit stopped the run.
    Limit(Limit),
}

impl BestEffortReason {
    /// The disclaimer appended to the answer.
    pub(crate) fn disclaimer(self) -> &'static str {
        match self {
            BestEffortReason::MaxRegenerations => {
                "Note: this answer could not be verified against the sources after the maximum number of regenerations; treat it with caution."
            }
            BestEffortReason::MaxQueryRewrites => {
                "Note: this answer may not fully resolve the question; the query was rewritten the maximum number of times."
            }
            BestEffortReason::NoSources => {
                "Note: no relevant sources were found (knowledge base and web search); this answer is not backed by any source."
            }
            BestEffortReason::AnswerLength => {
                "Note: the answer reached its length limit and may be cut short."
            }
            BestEffortReason::ModelUnavailable => {
                "Note: the model could not answer right now; these are the passages of the sources that best match the question."
            }
            BestEffortReason::ModelUnusable => {
                "Note: the model's answer did not pass the checks every answer must pass; these are the passages of the sources that best match the question."
            }
            BestEffortReason::Limit(Limit::StepLimit) => {
                "Note: the workflow reached its step limit; this is the best answer found so far."
            }
            BestEffortReason::Limit(Limit::Deadline) => {
                "Note: the workflow ran out of time; this is the best answer found so far."
            }
            BestEffortReason::Limit(Limit::TokenBudget) => {
                "Note: the workflow reached its token budget; this is the best answer found so far."
            }
            BestEffortReason::Limit(Limit::InterruptTimeout) => {
                "Note: the workflow's question to you was not answered in time; this is the best answer found so far."
            }
        }
    }
}

/// How the workflow ended, as far as the workflow is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "reason")]
pub(crate) enum Outcome {
    /// Grounded and useful (or unchecked by request).
    Completed,
    /// The best answer available, with a disclaimer.
    BestEffort(BestEffortReason),
    /// Stopped by the deadline; a continuation will finish it.
    Suspended,
    /// Stopped by its caller (`POST /workflow/runs/{run_id}/cancel`); the answer so far is kept.
    Cancelled,
}

/// Adaptive-RAG state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RagState {
    /// The validated request.
    pub request: RunRequest,
    /// The current retrieval query (the question, or its latest rewrite).
    pub query: String,
    /// Source chosen by `route_question`.
    pub route: Option<DataSource>,
    /// Current context documents (after grading: the relevant ones).
    pub documents: Vec<Document>,
    /// Latest generated answer.
    pub generation: Option<String>,
    /// Query rewrites so far (document grading and answer grading share this budget).
    pub query_transformation_retry_count: u32,
    /// Regenerations after an ungrounded answer.
    pub hallucination_retry_count: u32,
    /// The latest answer was cut at its output cap (`LLM_MAX_ANSWER_TOKENS`): it is kept, and
    /// the run ends `best_effort` with `answer_length`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) answer_cut: bool,
    /// The model could not write the answer (time-outs or server errors after their retries,
    /// unusable replies): it was quoted from the documents, and the run ends `best_effort`
    /// with `model_unavailable`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) model_unavailable: bool,
    /// The model's answers stayed under the floor ([`super::floor`]): the answer was quoted
    /// from the documents, and the run ends `best_effort` with `model_unusable`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) model_unusable: bool,
    /// The model has shown itself unreliable in this run (an answer of its under the floor,
    /// but for one from memory over passages it graded all irrelevant, which agrees with it):
    /// from then on its relevance grades are overruled by a clear match
    /// ([`super::overrule`]). A model that has not keeps its verdicts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) model_doubted: bool,
    /// The router chose the model alone although the retrieval had found a clear match, and
    /// the run went to the knowledge base instead (metadata `route_overruled`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) route_overruled: bool,
    /// The current query is the model's hypothetical answer: a rewrite written as the first
    /// sentence of a document that answers ([`crate::llm::Refined::hypothetical`]). A clear
    /// match it finds stands against the grader's `no` ([`super::overrule::rewrites_find`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) query_is_answer: bool,
    /// A fingerprint of the passages the latest knowledge-base retrieval returned, before
    /// grading ([`passages_fingerprint`]): a rewrite that retrieves the same ends the rewrite
    /// loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) retrieved: Option<u64>,
    /// The passages the latest grading judged irrelevant. A model whose answers stay under
    /// the floor is not trusted with relevance either: its quote draws on these too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) graded_out: Vec<Document>,
    /// Every passage a grading of this run judged irrelevant ([`passages_fingerprint`] of
    /// each): a search with the answer ([`super::research`]) never cites one, so a grader's
    /// `no` stands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) rejected: Vec<u64>,
    /// Generation attempts so far (numbers the `token` and `discarded` stream events).
    #[serde(default)]
    pub(crate) generations: u32,
    /// The answer check's verdict, asked together with the groundedness check and used by
    /// `grade_answer` only when the answer was grounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) answer_check: Option<bool>,
    /// Whether the web-search fallback ran after the rewrites were exhausted.
    pub web_fallback: bool,
    /// Set when web search was wanted but is not configured.
    pub web_search_unavailable: bool,
    /// Whether a deadline stop is continued by another invocation (a queue is configured).
    pub(crate) continue_on_deadline: bool,
    /// How it ended.
    pub(crate) outcome: Option<Outcome>,
    /// The answer shown to the caller (disclaimer included).
    pub answer: Option<String>,
    /// Who started the run: only this caller may read it. Checkpoints written before callers
    /// were recorded load as anonymous.
    #[serde(default, skip_serializing_if = "Caller::is_anonymous")]
    pub caller: Caller,
    /// The knowledge-base version this run searches (a bundle's content hash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kb_version: Option<String>,
    /// The retrieval a knowledge-base step of this run runs (`bm25` or `hybrid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieval: Option<RetrievalMode>,
    /// What a speculation fork found until it joins, and the run's speculation counters.
    #[serde(default, skip_serializing_if = "Speculating::is_empty")]
    pub(crate) speculation: Speculating,
    /// The thread this run is a turn of, with the recent turns its prompts see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<super::thread::ThreadContext>,
    /// When the run was created (epoch ms; 0 for runs stored before this was recorded): the
    /// order of the caller's run list.
    #[serde(default)]
    pub created_at_ms: u64,
    /// The run and step this run was forked from ([`super::forked`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkedFrom>,
    /// What the run asked a person and was told ([`super::interrupt`]).
    #[serde(default, skip_serializing_if = "super::person::Person::is_empty")]
    pub(crate) person: super::person::Person,
    /// The finished answer's citations as attribution settled them ([`super::attribution`]):
    /// set when the run ends with documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) attribution: Option<Attributed>,
}

/// A fingerprint of the passages `documents` (their sources and ids, in any order), `None`
/// for none: FNV-1a over the sorted ids, the same in every build (a checkpoint outlives one).
pub(crate) fn passages_fingerprint(documents: &[Document]) -> Option<u64> {
    let mut ids: Vec<(&str, &str)> = documents
        .iter()
        .map(|d| (d.url.as_str(), d.id.as_str()))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let bytes = ids
        .iter()
        .flat_map(|(url, id)| [url.as_bytes(), b"\x1f", id.as_bytes(), b"\x1e"])
        .flatten();
    let hash = bytes.fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    (!ids.is_empty()).then_some(hash)
}

/// One passage's fingerprint ([`passages_fingerprint`] of it alone).
pub(crate) fn passage_key(doc: &Document) -> u64 {
    passages_fingerprint(std::slice::from_ref(doc)).unwrap_or_default()
}

impl RagState {
    /// The initial state of a run.
    pub(crate) fn new(request: RunRequest) -> Self {
        Self {
            query: request.question.clone(),
            request,
            route: None,
            documents: Vec::new(),
            generation: None,
            query_transformation_retry_count: 0,
            hallucination_retry_count: 0,
            answer_cut: false,
            model_unavailable: false,
            model_unusable: false,
            model_doubted: false,
            route_overruled: false,
            query_is_answer: false,
            retrieved: None,
            rejected: Vec::new(),
            graded_out: Vec::new(),
            generations: 0,
            answer_check: None,
            web_fallback: false,
            web_search_unavailable: false,
            continue_on_deadline: false,
            outcome: None,
            answer: None,
            caller: Caller::Anonymous,
            kb_version: None,
            retrieval: None,
            speculation: Speculating::default(),
            thread: None,
            created_at_ms: 0,
            forked_from: None,
            person: super::person::Person::default(),
            attribution: None,
        }
    }

    /// The question the speculative branches route, grade and answer: the one the ordinary
    /// nodes ask about. One place to change should a node before the workflow proper rewrite
    /// it (the retrieval itself searches `query`, which such a node would set too).
    pub(crate) fn question(&self) -> &str {
        &self.request.question
    }

    /// The passages the answer cites, in citation order, with their text (the first passage
    /// of each cited source).
    pub(crate) fn cited_passages(&self) -> Vec<CitedPassage> {
        self.citations()
            .into_iter()
            .filter_map(|c| {
                let doc = self.documents.iter().find(|d| d.url == c.url)?;
                Some(CitedPassage {
                    url: c.url,
                    title: c.title,
                    text: doc.content.clone(),
                })
            })
            .collect()
    }

    /// The answer's citations: the passages it stands on once attribution settled them; for
    /// a run without (still running, suspended, or stored before attribution), every passage
    /// of the current context, deduplicated by URL, in order.
    pub(crate) fn citations(&self) -> Vec<Citation> {
        if let Some(attributed) = &self.attribution {
            let mut citations = attributed.citations.clone();
            let answer = self.answer.as_deref().unwrap_or_default();
            super::attribution::with_sentences(answer, &mut citations);
            return citations;
        }
        let mut seen = std::collections::HashSet::new();
        self.documents
            .iter()
            .filter(|d| seen.insert(d.url.as_str()))
            .map(|d| Citation {
                title: d.title.clone(),
                url: d.url.clone(),
                attributed: false,
                sentences: Vec::new(),
            })
            .collect()
    }

    /// Keeps the passages graded relevant (`keep`, one verdict per passage, in order) and sets
    /// the others aside ([`RagState::graded_out`]).
    pub(crate) fn set_aside(&mut self, keep: &[bool]) {
        let (kept, out): (Vec<_>, Vec<_>) = std::mem::take(&mut self.documents)
            .into_iter()
            .zip(keep.iter().copied().chain(std::iter::repeat(false)))
            .partition(|(_, keep)| *keep);
        self.documents = kept.into_iter().map(|(doc, _)| doc).collect();
        self.graded_out = out.into_iter().map(|(doc, _)| doc).collect();
        for doc in &self.graded_out {
            let key = passage_key(doc);
            if !self.rejected.contains(&key) {
                self.rejected.push(key);
            }
        }
    }

    /// Marks the answer as quoted from the documents, and why.
    pub(crate) fn quoted(&mut self, why: Quoted) {
        match why {
            Quoted::Unavailable => self.model_unavailable = true,
            Quoted::Unusable => self.model_unusable = true,
        }
    }

    /// Ends the workflow with `outcome`, fixing the caller-facing answer: an answer drawn
    /// from documents cites the passages that support it ([`super::attribution`]).
    pub(crate) fn finish(&mut self, outcome: Outcome, answer: String) {
        let answer = if self.documents.is_empty() {
            self.attribution = None;
            answer
        } else {
            let attributed =
                super::attribution::attribute(&answer, &self.request.question, &self.documents);
            let mut attributed = attributed;
            let text = std::mem::take(&mut attributed.text);
            // Read off the answer when the response is built: not stored twice.
            for citation in &mut attributed.citations {
                citation.sentences.clear();
            }
            self.attribution = Some(attributed);
            text
        };
        let answer = match outcome {
            Outcome::BestEffort(reason) => format!("{answer}\n\n{}", reason.disclaimer()),
            Outcome::Completed | Outcome::Suspended | Outcome::Cancelled => answer,
        };
        self.outcome = Some(outcome);
        self.answer = Some(answer);
    }
}
