//! The adaptive-RAG graph: its dependencies, limits and the engine hooks.

use super::speculation::{self, RagMerge};
use super::{nodes, prompts, BestEffortReason, Events, Outcome, RagError, RagNode, RagState};
use crate::config::{ModelWindow, Speculation};
use crate::embed::Embedder;
use crate::engine::{
    estimate_tokens, BranchOutput, Graph, Limit, RetryPolicy, StepCtx, StepOutput, Transition,
};
use crate::llm::{ChatModel, Task};
use crate::search::{Document, Reranker, RetrievalMode, Retriever, WebSearch};
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

/// Workflow-level loop bounds (the engine owns the step limit and the deadline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RagLimits {
    /// Query rewrites allowed (`MAX_RETRIES`).
    pub max_query_rewrites: u32,
    /// Regenerations of an ungrounded answer allowed (`MAX_REGENERATIONS`).
    pub max_regenerations: u32,
}

/// The defaults of `MAX_RETRIES` and `MAX_REGENERATIONS`.
impl Default for RagLimits {
    fn default() -> Self {
        Self {
            max_query_rewrites: crate::config::DEFAULT_MAX_QUERY_REWRITES,
            max_regenerations: crate::config::DEFAULT_MAX_REGENERATIONS,
        }
    }
}

/// The graph and its clients, built once per process and shared by every run.
#[derive(Clone)]
pub struct RagGraph {
    pub(crate) model: Arc<dyn ChatModel>,
    pub(crate) kb: Arc<dyn Retriever>,
    pub(crate) web: Option<Arc<dyn WebSearch>>,
    pub(crate) embedder: Option<Arc<dyn Embedder>>,
    pub(crate) reranker: Option<Arc<dyn Reranker>>,
    pub(crate) limits: RagLimits,
    pub(crate) tenant_key: Option<String>,
    pub(crate) remote_policy: RetryPolicy,
    pub(crate) events: Events,
    pub(crate) speculation: Speculation,
    /// The model's context window and the answer's cap (`LLM_CONTEXT_TOKENS`,
    /// `LLM_MAX_ANSWER_TOKENS`).
    pub(crate) window: ModelWindow,
    /// The workflow version its checkpoints record and the versions it resumes.
    pub(crate) versioning: crate::engine::Versioning,
}

impl RagGraph {
    /// A graph over these clients.
    pub fn new(
        model: Arc<dyn ChatModel>,
        kb: Arc<dyn Retriever>,
        web: Option<Arc<dyn WebSearch>>,
        limits: RagLimits,
    ) -> Self {
        Self {
            model,
            kb,
            web,
            embedder: None,
            reranker: None,
            limits,
            tenant_key: None,
            remote_policy: RetryPolicy::REMOTE,
            events: Events::default(),
            speculation: Speculation::Off,
            window: ModelWindow::default(),
            versioning: super::version::versioning(),
        }
    }

    /// Speculates on knowledge-base questions when `on` (`SPECULATION`; a graph built with
    /// [`RagGraph::new`] does not until told), unless a request turns it off.
    pub fn with_speculation(mut self, speculation: Speculation) -> Self {
        self.speculation = speculation;
        self
    }

    /// Budgets prompts for `window` and caps answers at its `max_answer_tokens` (a graph
    /// built with [`RagGraph::new`] uses the defaults).
    pub fn with_model_window(mut self, window: ModelWindow) -> Self {
        self.window = window;
        self
    }

    /// The output cap of a `task` call: a decision's own small cap, else the answer's.
    pub(crate) fn output_cap(&self, task: Task) -> u32 {
        task.decision_cap().unwrap_or(self.window.max_answer_tokens)
    }

    /// The first node of a run's workflow proper (a node that prepares the question may run
    /// before it): `kg_retrieval` when the run speculates, else `route_question`.
    pub(crate) fn entry(&self, state: &RagState) -> RagNode {
        let off = state.request.speculation == Some(Speculation::Off);
        if self.speculation.is_on() && !off {
            RagNode::KgRetrieval
        } else {
            RagNode::RouteQuestion
        }
    }

    /// The same graph (sharing its clients) reporting to `events`: one per watched run.
    pub(crate) fn with_events(&self, events: Events) -> Self {
        Self {
            events,
            ..self.clone()
        }
    }

    /// Embeds queries with `embedder`, so a knowledge base with vectors of the same model is
    /// searched hybrid (BM25 fused with vector similarity).
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// Reorders every knowledge-base retrieval with `reranker` (`RERANK_BASE_URL`): more
    /// candidates are retrieved, the reranker keeps the best `n_retrieved_documents`.
    pub fn with_reranker(mut self, reranker: Arc<dyn Reranker>) -> Self {
        self.reranker = Some(reranker);
        self
    }

    /// Pins every caller to the knowledge-base documents whose metadata under `key` equals
    /// its caller id (`KB_TENANT_KEY`), whatever filter a request sends.
    pub fn with_tenant_key(mut self, key: Option<String>) -> Self {
        self.tenant_key = key;
        self
    }

    /// The same graph searching a fixed version of the knowledge base from the first step of
    /// a run to its last (see [`Retriever::snapshot`]).
    pub(crate) fn pinned(&self) -> Self {
        match self.kb.snapshot() {
            Some(kb) => Self { kb, ..self.clone() },
            None => self.clone(),
        }
    }

    /// Which retrieval a knowledge-base step of this graph runs: hybrid when queries can be
    /// embedded and the knowledge base has vectors of the same model.
    pub(crate) fn retrieval_mode(&self) -> RetrievalMode {
        match (&self.embedder, self.kb.embedding()) {
            (Some(embedder), Some(info)) if info.model == embedder.model() => RetrievalMode::Hybrid,
            _ => RetrievalMode::Bm25,
        }
    }

    /// The version of the knowledge base searched, if it has one.
    pub fn kb_version(&self) -> Option<String> {
        self.kb.version()
    }

    /// Replaces the retry policy of remote calls (model, web search).
    pub fn with_remote_policy(mut self, policy: RetryPolicy) -> Self {
        self.remote_policy = policy;
        self
    }

    /// The model's provider name.
    pub fn provider(&self) -> &'static str {
        self.model.name()
    }
}

#[async_trait]
impl Graph for RagGraph {
    type State = RagState;
    type Node = RagNode;
    type Error = RagError;
    type Merge = RagMerge;

    fn start(&self, state: &RagState) -> RagNode {
        // A thread's follow-up is made to stand alone first.
        if state.thread.as_ref().is_some_and(|t| !t.history.is_empty()) {
            return RagNode::ContextualizeQuestion;
        }
        self.entry(state)
    }

    fn retry_policy(&self, node: RagNode) -> RetryPolicy {
        match node {
            // Only the query's embedding and rerank calls are remote; a local search error is
            // permanent.
            RagNode::KgRetrieval if self.embedder.is_none() && self.reranker.is_none() => {
                RetryPolicy::NONE
            }
            _ => self.remote_policy,
        }
    }

    fn estimate(&self, node: RagNode) -> Duration {
        match node {
            RagNode::KgRetrieval => Duration::from_millis(5),
            _ => Duration::from_millis(50),
        }
    }

    fn token_estimate(&self, node: RagNode, state: &RagState) -> u64 {
        let question = state.request.question.as_str();
        let answer = state.generation.as_deref();
        let one = |task: Task, documents: &[Document], answer: Option<&str>| {
            prompts::messages(task, question, documents, answer)
                .iter()
                .map(|m| estimate_tokens(&m.content))
                .sum::<u64>()
                + task.expected_completion_tokens()
        };
        match node {
            RagNode::KgRetrieval => match state.retrieval {
                Some(mode) if mode.is_hybrid() => estimate_tokens(&state.query),
                _ => 0,
            },
            RagNode::WebSearch | RagNode::Speculate => 0,
            RagNode::ContextualizeQuestion => {
                one(Task::ContextualizeQuestion, &[], None) + super::thread::estimate_history(state)
            }
            RagNode::RouteQuestion => one(Task::RouteQuery, &[], None),
            RagNode::TransformQuery => one(Task::RefineQuery, &[], None),
            RagNode::GradeDocuments => state
                .documents
                .iter()
                .map(|d| one(Task::GradeDocuments, std::slice::from_ref(d), None))
                .sum(),
            RagNode::Generate => {
                one(Task::GenerateAnswer, &state.documents, None)
                    + super::thread::estimate_history(state)
            }
            RagNode::GradeHallucinations => {
                let answer_check = if state.request.check_answer() {
                    one(Task::GradeAnswer, &[], answer)
                } else {
                    0
                };
                one(Task::GradeHallucinations, &state.documents, answer) + answer_check
            }
            RagNode::GradeAnswer if state.answer_check.is_some() => 0,
            RagNode::GradeAnswer => one(Task::GradeAnswer, &[], answer),
        }
    }

    async fn step(
        &self,
        node: RagNode,
        state: &mut RagState,
        ctx: &StepCtx<'_>,
    ) -> Result<StepOutput<RagNode>, RagError> {
        match node {
            RagNode::ContextualizeQuestion => {
                super::thread::contextualize_question(self, state, ctx).await
            }
            // A fork always has branches; run as a step, it would start by routing.
            RagNode::RouteQuestion | RagNode::Speculate => {
                nodes::route_question(self, state, ctx).await
            }
            RagNode::KgRetrieval => nodes::kg_retrieval(self, state, ctx).await,
            RagNode::GradeDocuments => nodes::grade_documents(self, state, ctx).await,
            RagNode::TransformQuery => nodes::transform_query(self, state, ctx).await,
            RagNode::WebSearch => nodes::web_search(self, state, ctx).await,
            RagNode::Generate => nodes::generate(self, state, ctx).await,
            RagNode::GradeHallucinations => nodes::grade_hallucinations(self, state, ctx).await,
            RagNode::GradeAnswer => nodes::grade_answer(self, state, ctx).await,
        }
    }

    fn branches(&self, node: RagNode, state: &RagState) -> Vec<RagNode> {
        match node {
            RagNode::Speculate => speculation::branches(state),
            _ => Vec::new(),
        }
    }

    async fn branch(
        &self,
        node: RagNode,
        state: &RagState,
        ctx: &StepCtx<'_>,
    ) -> Result<BranchOutput<RagMerge>, RagError> {
        speculation::branch(self, node, state, ctx).await
    }

    fn merge(&self, state: &mut RagState, merge: RagMerge) {
        speculation::merge(state, merge);
    }

    fn join(&self, _node: RagNode, state: &mut RagState) -> Transition<RagNode> {
        speculation::join(self, state)
    }

    fn on_limit(&self, state: &mut RagState, limit: Limit) {
        let answer = best_answer_so_far(state);
        if limit == Limit::Deadline && state.continue_on_deadline {
            state.outcome = Some(Outcome::Suspended);
            state.answer = Some(answer);
        } else {
            state.finish(Outcome::BestEffort(BestEffortReason::Limit(limit)), answer);
        }
    }
}

/// The latest answer if there is one, else an extractive answer from the documents found.
fn best_answer_so_far(state: &RagState) -> String {
    if let Some(generation) = &state.generation {
        return generation.clone();
    }
    if let Some(speculative) = &state.speculation.answer {
        return speculative.answer.clone();
    }
    if state.documents.is_empty() {
        return "No answer could be produced before the workflow was stopped.".to_owned();
    }
    crate::llm::extractive_answer(&state.request.question, &state.documents)
}
