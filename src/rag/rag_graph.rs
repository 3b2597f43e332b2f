//! The adaptive-RAG graph: its dependencies and limits, built once per process (the engine
//! hooks that run it are in `hooks.rs`).

use super::{Events, RagNode, RagState};
use crate::config::{Interrupts, ModelWindow, Speculation};
use crate::embed::Embedder;
use crate::engine::WorkflowVersion;
use crate::kb::Retriever;
use crate::llm::{ChatModel, DataSource, Task};
use crate::retry::RetryPolicy;
use crate::search::{Reranker, RetrievalMode, WebSearch};
use std::sync::Arc;

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
    /// `KB_DESCRIPTION`: what the knowledge base covers, instead of the one it records.
    pub(crate) kb_description: Option<String>,
    pub(crate) remote_policy: RetryPolicy,
    pub(crate) events: Events,
    pub(crate) speculation: Speculation,
    /// The model's context window and the answer's cap (`LLM_CONTEXT_TOKENS`,
    /// `LLM_MAX_ANSWER_TOKENS`).
    pub(crate) window: ModelWindow,
    /// The workflow version its checkpoints record and the versions it resumes.
    pub(crate) versioning: crate::engine::Versioning,
    /// When a run waits for a person (`CLARIFY`, `APPROVE_STEPS`, `INTERRUPT_TIMEOUT_SECONDS`).
    pub(crate) interrupts: Arc<Interrupts>,
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
            kb_description: None,
            remote_policy: RetryPolicy::REMOTE,
            events: Events::default(),
            speculation: Speculation::Off,
            window: ModelWindow::default(),
            versioning: super::version::versioning(),
            interrupts: Arc::new(Interrupts::OFF),
        }
    }

    /// Searches the web with `web` (a graph built with [`RagGraph::new`] has the web search
    /// it was given).
    pub fn with_web_search(mut self, web: Arc<dyn WebSearch>) -> Self {
        self.web = Some(web);
        self
    }

    /// Waits for a person as `interrupts` says (a graph built with [`RagGraph::new`] never
    /// waits until told).
    pub fn with_interrupts(mut self, interrupts: Interrupts) -> Self {
        self.interrupts = Arc::new(interrupts);
        self
    }

    /// Speculates on knowledge-base questions when `on` (`SPECULATION`; a graph built with
    /// [`RagGraph::new`] does not until told), unless a request turns it off.
    pub fn with_speculation(mut self, speculation: Speculation) -> Self {
        self.speculation = speculation;
        self
    }

    /// Budgets prompts for `window` and caps answers at its `max_answer_tokens` (a graph
    /// built with [`RagGraph::new`] uses the defaults).
    pub(crate) fn with_model_window(mut self, window: ModelWindow) -> Self {
        self.window = window;
        self
    }

    /// The output cap of a `task` call: a decision's own small cap, else the answer's, plus
    /// the reasoning allowance ([`ModelWindow::output_cap`]).
    pub(crate) fn output_cap(&self, task: Task) -> u32 {
        self.window.output_cap(task.decision_cap())
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

    /// Tells the router that the knowledge base covers `description` (`KB_DESCRIPTION`)
    /// instead of what the knowledge base records about itself.
    pub fn with_kb_description(mut self, description: Option<String>) -> Self {
        self.kb_description = description;
        self
    }

    /// What the router is told (`None` for every other task): what the knowledge base covers
    /// (`KB_DESCRIPTION`, else the knowledge base's own description) and whether web search is
    /// configured.
    pub(crate) fn routing(&self, task: Task) -> Option<super::prompts::Routing> {
        if task != Task::RouteQuery {
            return None;
        }
        Some(super::prompts::Routing {
            about: self
                .kb_description
                .clone()
                .or_else(|| self.kb.description()),
            web: self.web.is_some(),
        })
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

    /// Where a routed question goes: the router's choice, or the knowledge base when it chose
    /// web search and none is configured. The routing prompt offers only the sources there
    /// are, but a model (or the offline provider's rule for time-bound questions) may name web
    /// search anyway; the knowledge base may hold the answer, where an unconfigured web search
    /// would end the run without sources.
    pub(crate) fn available_source(&self, chosen: DataSource) -> DataSource {
        match chosen {
            DataSource::WebSearch if self.web.is_none() => DataSource::KgRetrieval,
            other => other,
        }
    }

    /// The version of the knowledge base searched, if it has one.
    pub(crate) fn kb_version(&self) -> Option<String> {
        self.kb.version()
    }

    /// Replaces the retry policy of remote calls (model, web search).
    pub fn with_remote_policy(mut self, policy: RetryPolicy) -> Self {
        self.remote_policy = policy;
        self
    }

    /// The model's provider name.
    pub(crate) fn provider(&self) -> &'static str {
        self.model.name()
    }
}

impl RagGraph {
    /// The workflow version recorded in this graph's checkpoints.
    pub fn workflow_version(&self) -> &WorkflowVersion {
        &self.versioning.current
    }

    /// The same graph resuming runs of `older` too: for a graph change reviewed as keeping
    /// every checkpoint of `older` meaningful.
    pub fn resuming_from(mut self, older: WorkflowVersion) -> Self {
        self.versioning.resumes_from.push(older);
        self
    }
}
