//! [`Runs`]: the run life cycle of one process, built once: the graph with its clients, the
//! checkpoint store, the clock, what a caller is admitted to (`MAX_REQUESTS_PER_CALLER_PER_MINUTE`,
//! `MAX_ACTIVE_RUNS_PER_CALLER`), completion events, and the one rule that turns an
//! invocation's Lambda deadline into the run's [`Budget`]. The API, streaming and worker
//! handlers and the CLI all take their budget from [`Runs::budget`], so a deadline is handled
//! the same way everywhere.
//!
//! The calls the entry points make are in the files of their concern (`start.rs`, `work.rs`,
//! `control.rs`); this file holds the clients and how they are put together.

use super::finished::{CompletionEvents, NotifyError};
use super::thread::Threads;
use super::workflow::Workflow;
use crate::aws;
use crate::clock::Clock;
use crate::config::{Budgets, Settings, ThreadSettings};
use crate::engine::Budget;
use crate::rag::{Caller, Events, RagGraph};
use crate::store::CheckpointStore;
use lambda_runtime::Context;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

/// What a caller is admitted to: run requests per minute and unfinished runs (`None`:
/// unlimited).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Admission {
    /// `MAX_REQUESTS_PER_CALLER_PER_MINUTE`.
    pub(crate) max_requests_per_minute: Option<u32>,
    /// `MAX_ACTIVE_RUNS_PER_CALLER`.
    pub(crate) max_active_runs: Option<u32>,
}

/// The run life cycle of one process: the workflow's clients, the budget rules and what a
/// caller is admitted to.
#[derive(Clone)]
pub struct Runs {
    graph: RagGraph,
    store: Arc<dyn CheckpointStore>,
    clock: Arc<dyn Clock>,
    /// `WORKFLOW_RECURSION_LIMIT`.
    max_steps: u32,
    /// `MAX_TOKENS_PER_RUN` (a request's `max_tokens` may lower it).
    max_tokens: Option<u64>,
    /// `DEADLINE_MARGIN_MS` and `RUN_TIMEOUT_MS`.
    budgets: Budgets,
    /// Whether a deadline stop is continued by another invocation (a work queue exists).
    continue_on_deadline: bool,
    /// `THREAD_HISTORY_TURNS`, `THREAD_HISTORY_TOKENS`, `THREAD_TTL_SECONDS`.
    threads: ThreadSettings,
    /// `Run Finished` events (`EVENT_BUS_NAME`); `None` sends none.
    events: Option<Arc<CompletionEvents>>,
    /// What a caller is admitted to.
    admission: Admission,
}

impl Runs {
    /// The runs of `settings` over ready-made clients.
    pub(crate) fn new(
        settings: &Settings,
        graph: RagGraph,
        store: Arc<dyn CheckpointStore>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            graph,
            store,
            clock,
            max_steps: settings.limits.recursion_limit,
            max_tokens: settings.limits.max_tokens_per_run,
            budgets: settings.budgets,
            continue_on_deadline: settings.aws.work_queue_url.is_some(),
            threads: settings.threads,
            events: None,
            admission: Admission {
                max_requests_per_minute: settings.limits.max_requests_per_caller_per_minute,
                max_active_runs: settings.limits.max_active_runs_per_caller,
            },
        }
    }

    /// These runs with another `MAX_ACTIVE_RUNS_PER_CALLER` (`None`: unlimited).
    pub(crate) fn with_max_active_runs_per_caller(mut self, limit: Option<u32>) -> Self {
        self.admission.max_active_runs = limit;
        self
    }

    /// These runs with another `MAX_REQUESTS_PER_CALLER_PER_MINUTE` (`None`: unlimited).
    pub(crate) fn with_max_requests_per_caller_per_minute(mut self, limit: Option<u32>) -> Self {
        self.admission.max_requests_per_minute = limit;
        self
    }

    /// What a caller is admitted to.
    pub(super) fn admission(&self) -> Admission {
        self.admission
    }

    /// These runs sending a `Run Finished` event per finished run through `events`.
    pub fn with_completion_events(mut self, events: CompletionEvents) -> Self {
        let events = events.timed(self.clock.clone(), self.lease_grace());
        self.events = Some(Arc::new(events));
        self
    }

    /// Sends the completion event of `run_id` if it ended and was not sent yet (nothing
    /// without `EVENT_BUS_NAME`). An error means it was not sent and will be tried again by
    /// the next delivery of the run or the next sweep.
    pub(crate) async fn notify(&self, run_id: &str) -> Result<(), NotifyError> {
        let Some(events) = &self.events else {
            return Ok(());
        };
        events.notify(self.store.as_ref(), run_id).await.map(|_| ())
    }

    /// Puts the `Run Waiting` event of `run_id` (nothing without `EVENT_BUS_NAME`); a failure
    /// is logged: the run stays readable and listed as `waiting`.
    pub(crate) async fn announce_waiting(&self, run_id: &str) {
        let Some(events) = &self.events else {
            return;
        };
        let loaded = match crate::engine::Session::load::<crate::rag::RagCheckpoint>(
            self.store.as_ref(),
            run_id,
        )
        .await
        {
            Ok(Some(loaded)) => loaded,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(run_id, error = %e, "waiting event not sent: run unreadable");
                return;
            }
        };
        let response = crate::rag::RunResponse::from_checkpoint(&loaded.checkpoint, "");
        match events.waiting(&loaded.checkpoint, &response).await {
            Ok(()) => tracing::info!(run_id, "waiting event sent"),
            Err(e) => tracing::warn!(run_id, error = %e, "waiting event not sent"),
        }
    }

    /// The run driver over these clients: it starts, resumes, cancels and reads runs without
    /// any admission (tests, `eval`, and the calls of this room).
    pub fn workflow(&self) -> Workflow<'_> {
        self.workflow_on(&self.graph)
    }

    /// The run driver acting for `caller` ([`Workflow::for_caller`]); the operator's view
    /// (any run) when `None`.
    pub(super) fn workflow_for<'a>(&'a self, caller: Option<&'a Caller>) -> Workflow<'a> {
        match caller {
            Some(caller) => self.workflow().for_caller(caller),
            None => self.workflow(),
        }
    }

    /// The conversation threads kept in the checkpoint store.
    pub fn threads(&self) -> Threads<'_> {
        Threads::new(self.store.as_ref(), self.clock.as_ref(), self.threads)
    }

    /// The run driver over `graph` (this graph reporting events) and these clients.
    pub(super) fn workflow_on<'a>(&'a self, graph: &'a RagGraph) -> Workflow<'a> {
        Workflow::new(graph, self.store.as_ref(), self.clock.as_ref())
            .with_continuation(self.continue_on_deadline)
            .with_lease_grace(self.lease_grace())
            .with_completion_events(self.events.is_some())
    }

    /// The budget of one invocation, drawn now: the Lambda deadline of `invocation` (none
    /// outside Lambda) minus `DEADLINE_MARGIN_MS`, capped by `RUN_TIMEOUT_MS`, with the step
    /// limit and `MAX_TOKENS_PER_RUN`.
    pub fn budget(&self, invocation: Option<&Context>) -> Budget {
        Budget::from_deadline(
            self.max_steps,
            invocation.map(|context| context.deadline),
            self.clock.now_ms(),
            self.budgets.deadline_margin,
            self.budgets.run_timeout,
        )
        .with_max_tokens(self.max_tokens)
    }

    /// The same runs without query embeddings (`embed` false) and without the rerank stage
    /// (`rerank` false), for comparisons.
    pub(crate) fn retrieval_subset(&self, embed: bool, rerank: bool) -> Runs {
        let mut runs = self.clone();
        if !embed {
            runs.graph.embedder = None;
        }
        if !rerank {
            runs.graph.reranker = None;
        }
        runs
    }

    /// The graph and its clients.
    pub(crate) fn graph(&self) -> &RagGraph {
        &self.graph
    }

    /// The graph, reporting a run's events to `events` when someone listens to them.
    pub(super) fn graph_for(&self, events: Events) -> Cow<'_, RagGraph> {
        if events.is_on() {
            Cow::Owned(self.graph.with_events(events))
        } else {
            Cow::Borrowed(&self.graph)
        }
    }

    /// The checkpoint store.
    pub fn store(&self) -> &dyn CheckpointStore {
        self.store.as_ref()
    }

    /// The time source.
    pub(crate) fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    fn lease_grace(&self) -> Duration {
        aws::lease_grace(self.budgets.deadline_margin)
    }
}

impl AsRef<Runs> for Runs {
    fn as_ref(&self) -> &Runs {
        self
    }
}
