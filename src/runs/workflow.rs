//! The run driver: the adaptive-RAG graph run against a store — a run created and advanced,
//! resumed, stored for a worker, cancelled, failed, read. It owns no workflow logic (the graph
//! decides, the engine bounds, the store persists) and no admission: entry points call
//! [`super::Runs`], whose calls drive runs through here; tests and `eval` drive it directly.

use super::cancel::{self, Cancel};
use super::observed::Observed;
use super::thread::record_finished;
use crate::clock::Clock;
use crate::engine::{
    advance, run_key, Budget, Checkpoint, EngineError, FailedAt, Incompatible, Loaded, NodeFailure,
    Persist, Phase, Session,
};
use crate::error::ErrorClass;
use crate::rag::ThreadContext;
use crate::rag::{
    Caller, CitedPassage, Outcome, RagCheckpoint, RagGraph, RagState, RunRequest, RunResponse,
};
use crate::store::{CheckpointStore, Lease, StoreError};
use std::time::Duration;
use tracing::Instrument;

/// How long a submitted run waits for its first message before the sweeper re-queues it:
/// far longer than a message sits in a healthy queue, so only a run whose message was never
/// sent (the API answered 5xx after storing it) is re-queued, and a backlog gets no
/// duplicates.
pub const QUEUED_LEASE: Duration = Duration::from_secs(15 * 60);

/// Lease time past the budget's deadline when none is configured ([`Workflow::new`]); the
/// app derives it from `DEADLINE_MARGIN_MS` instead ([`crate::aws::lease_grace`]).
const LEASE_GRACE: Duration = Duration::from_secs(10);

/// The run driver: the adaptive-RAG graph against a store, built with [`Workflow::new`], adjusted
/// with the `with_*` methods, then asked to start, continue or read runs.
///
/// A workflow of no particular caller (the CLI, the SQS worker) starts anonymous runs and
/// reads any run; [`Workflow::for_caller`] scopes it to one caller, whose new runs belong to
/// it and for whom another caller's run reads as not found.
#[derive(Clone, Copy)]
pub struct Workflow<'a> {
    pub(super) graph: &'a RagGraph,
    pub(super) store: &'a dyn CheckpointStore,
    pub(super) clock: &'a dyn Clock,
    /// Whether a deadline stop will be continued by another invocation (a queue exists).
    pub(super) continue_on_deadline: bool,
    /// How long an invocation's lease outlasts its budget's deadline: the time its last
    /// checkpoint write and a continuation send may still take. Once the lease lapses, a
    /// crashed invocation's run can be taken over (by a redelivery or the sweeper).
    pub(super) lease_grace: Duration,
    /// The caller whose runs these are; `None` for the operator's view (any run).
    pub(super) caller: Option<&'a Caller>,
    /// The thread turn a new run answers ([`Workflow::in_thread`]).
    pub(super) thread: Option<&'a ThreadContext>,
    /// Whether a run's final write parks its lease instead of dropping it, until its
    /// completion event is sent (`EVENT_BUS_NAME`): if the invocation dies first, the lease
    /// lapses and the sweeper re-queues the run, whose next delivery sends the event.
    pub(super) hold_finished: bool,
}

impl<'a> Workflow<'a> {
    /// A workflow of no particular caller whose deadline stops are final.
    pub fn new(graph: &'a RagGraph, store: &'a dyn CheckpointStore, clock: &'a dyn Clock) -> Self {
        Self {
            graph,
            store,
            clock,
            continue_on_deadline: false,
            lease_grace: LEASE_GRACE,
            caller: None,
            thread: None,
            hold_finished: false,
        }
    }

    /// The same workflow keeping a finished run's lease parked when `on` (completion events
    /// are sent: see `hold_finished`).
    pub(crate) fn with_completion_events(self, on: bool) -> Self {
        Self {
            hold_finished: on,
            ..self
        }
    }

    /// The same workflow keeping its checkpoints in `store`.
    pub(crate) fn with_store(self, store: &'a dyn CheckpointStore) -> Self {
        Self { store, ..self }
    }

    /// The same workflow reading time from `clock`.
    pub fn with_clock(self, clock: &'a dyn Clock) -> Self {
        Self { clock, ..self }
    }

    /// The same workflow, whose deadline stops are continued by another invocation when
    /// `continued` (a queue exists) and final otherwise.
    pub(crate) fn with_continuation(self, continued: bool) -> Self {
        Self {
            continue_on_deadline: continued,
            ..self
        }
    }

    /// The same workflow whose leases outlast the budget's deadline by `grace`.
    pub(crate) fn with_lease_grace(self, grace: Duration) -> Self {
        Self {
            lease_grace: grace,
            ..self
        }
    }

    /// The same workflow acting for `caller`: its new runs belong to `caller`, and reading
    /// another caller's run is [`EngineError::NotFound`].
    pub(crate) fn for_caller(self, caller: &'a Caller) -> Self {
        Self {
            caller: Some(caller),
            ..self
        }
    }

    /// The same workflow whose new runs answer the thread turn `thread` (started with
    /// [`super::thread::Threads::begin`]); `None`: single-turn runs.
    pub fn in_thread(self, thread: Option<&'a ThreadContext>) -> Self {
        Self { thread, ..self }
    }

    /// Starts a new run (of this workflow's caller, else anonymous) and advances it within
    /// `budget`.
    pub async fn run_new(
        &self,
        run_id: &str,
        request: RunRequest,
        budget: &Budget,
    ) -> Result<RunResponse, EngineError> {
        let span = tracing::info_span!("run", run_id);
        async {
            let anonymous = Caller::Anonymous;
            let caller = self.caller.unwrap_or(&anonymous);
            // One knowledge-base version from the first step to the last.
            let graph = &self.graph.pinned();
            let cp = self.new_checkpoint(graph, caller, run_id, request);
            self.create_and_advance(graph, cp, budget).await
        }
        .instrument(span)
        .await
    }

    /// Starts the new run `cp` (a fork of another, built from a step of it) and advances it
    /// within `budget`; the steps it carries are not run again.
    pub(crate) async fn run_forked(
        &self,
        mut cp: RagCheckpoint,
        budget: &Budget,
    ) -> Result<RunResponse, EngineError> {
        let span = tracing::info_span!("run", run_id = cp.run_id);
        async {
            let graph = &self.graph.pinned();
            cp.workflow_version = Some(graph.workflow_version().clone());
            cp.state.continue_on_deadline = self.continue_on_deadline;
            cp.state.kb_version = graph.kb_version();
            cp.state.retrieval = Some(graph.retrieval_mode());
            self.create_and_advance(graph, cp, budget).await
        }
        .instrument(span)
        .await
    }

    /// Stores the new run `cp`, holding its lease, and advances it within `budget`.
    async fn create_and_advance(
        &self,
        graph: &RagGraph,
        mut cp: RagCheckpoint,
        budget: &Budget,
    ) -> Result<RunResponse, EngineError> {
        let run_id = cp.run_id.clone();
        let budget = &self.run_budget(&cp, budget);
        let session = Session::create(self.store, &run_id, &cp, self.lease(budget)).await?;
        let mut persist = Observed::new(session, &self.graph.events, &cp, self.hold_finished);
        let span = crate::genai::workflow(&run_id, cp.state.request.thread_id.as_deref());
        // On the heap: the engine's future holds every step's, and the futures of the
        // callers that await a run (a handler's, a test's) would otherwise carry it.
        let advanced = Box::pin(advance(graph, &mut cp, budget, self.clock, &mut persist))
            .instrument(span.clone())
            .await;
        if let Err(e) = advanced {
            span.record("outcome", "error");
            return self.settle(&run_id, e).await;
        }
        record_finished(self.store, self.clock, &cp).await;
        Ok(traced(&span, self.respond(&cp)))
    }

    /// Stores a new run (of this workflow's caller, else anonymous) without advancing it (an
    /// asynchronous run, to be continued by a worker).
    ///
    /// The run holds a parked lease ([`QUEUED_LEASE`]) that binds no one: the worker its
    /// message reaches takes the run at once, but if the message is never sent, the sweeper
    /// finds the run once that lease lapses and queues it.
    pub async fn submit(
        &self,
        run_id: &str,
        request: RunRequest,
    ) -> Result<RunResponse, EngineError> {
        let anonymous = Caller::Anonymous;
        let caller = self.caller.unwrap_or(&anonymous);
        let cp = self.new_checkpoint(self.graph, caller, run_id, request);
        let key = crate::engine::run_key(run_id);
        let body = serde_json::to_vec(&cp).map_err(|e| EngineError::Corrupt {
            run_id: run_id.to_owned(),
            message: e.to_string(),
        })?;
        let queued = Lease::parked(
            self.clock
                .now_ms()
                .saturating_add(u64::try_from(QUEUED_LEASE.as_millis()).unwrap_or(u64::MAX)),
        );
        self.store
            .put(&key, 0, &body, Some(&queued))
            .await
            .map_err(|e| match e {
                crate::store::StoreError::Conflict { .. } => EngineError::Exists {
                    run_id: run_id.to_owned(),
                },
                other => EngineError::Store(other),
            })?;
        Ok(self.respond(&cp))
    }

    /// Continues a stored run within `budget`. A finished or permanently failed run is not
    /// advanced; its stored answer is returned.
    pub async fn resume(&self, run_id: &str, budget: &Budget) -> Result<RunResponse, EngineError> {
        let loaded = Session::load::<RagCheckpoint>(self.store, run_id)
            .await?
            .ok_or_else(|| EngineError::NotFound {
                run_id: run_id.to_owned(),
            })?;
        // A wait nobody answered in time (the sweeper re-queued it when it ran out).
        if loaded.checkpoint.wait_expired(self.clock.now_ms()) {
            return self.end_wait(run_id, loaded).await;
        }
        self.advance_loaded(run_id, loaded, budget).await
    }

    /// Takes the loaded run `loaded` and advances it within `budget`, when it can advance;
    /// its response as it stands otherwise.
    pub(super) async fn advance_loaded(
        &self,
        run_id: &str,
        loaded: Loaded<RagCheckpoint>,
        budget: &Budget,
    ) -> Result<RunResponse, EngineError> {
        let budget = &self.run_budget(&loaded.checkpoint, budget);
        if !loaded.checkpoint.can_advance(budget) {
            return Ok(self.respond(&loaded.checkpoint));
        }
        if let Err(incompatible) = self
            .graph
            .versioning
            .check(loaded.checkpoint.workflow_version.as_ref())
        {
            return self.fail_incompatible(run_id, loaded, incompatible).await;
        }
        let session = match Session::lock(
            self.store,
            run_id,
            &loaded,
            self.lease(budget),
            self.clock.now_ms(),
        )
        .await
        {
            Ok(session) => session,
            Err(e) => return self.settle(run_id, e).await,
        };
        let mut cp = loaded.checkpoint;
        cp.workflow_version = Some(self.graph.workflow_version().clone());
        cp.state.continue_on_deadline = self.continue_on_deadline;
        if cp.state.outcome == Some(Outcome::Suspended) {
            cp.state.outcome = None;
        }
        let graph = &self.graph.pinned();
        cp.state.kb_version = graph.kb_version();
        cp.state.retrieval = Some(graph.retrieval_mode());
        let mut persist = Observed::new(session, &self.graph.events, &cp, self.hold_finished);
        let span = crate::genai::workflow(run_id, cp.state.request.thread_id.as_deref());
        let advanced = advance(graph, &mut cp, budget, self.clock, &mut persist)
            .instrument(span.clone())
            .instrument(tracing::info_span!("run", run_id))
            .await;
        if let Err(e) = advanced {
            span.record("outcome", "error");
            return self.settle(run_id, e).await;
        }
        record_finished(self.store, self.clock, &cp).await;
        Ok(traced(&span, self.respond(&cp)))
    }

    /// Cancels a run (of this workflow's caller, when it has one): see `cancel.rs`.
    pub(crate) async fn cancel(&self, run_id: &str) -> Result<Cancel, EngineError> {
        let hold = self
            .hold_finished
            .then(|| self.lease_until(self.clock.now_ms()).to_parked());
        let cancel =
            cancel::cancel(self.store, self.caller, run_id, hold, |cp| self.respond(cp)).await?;
        if matches!(cancel, Cancel::Cancelled(_)) {
            // A thread's turn ends with its run: the thread is free for its next turn at once.
            if let Ok(Some(loaded)) = Session::load::<RagCheckpoint>(self.store, run_id).await {
                record_finished(self.store, self.clock, &loaded.checkpoint).await;
            }
        }
        Ok(cancel)
    }

    /// The answer of an invocation whose write failed with `error`: the cancelled run's,
    /// when a cancel is why; otherwise `error`.
    async fn settle(&self, run_id: &str, error: EngineError) -> Result<RunResponse, EngineError> {
        cancel::settle(self.store, run_id, error, |cp| self.respond(cp)).await
    }

    /// Ends a run this code cannot resume (written by an incompatible workflow version) as
    /// `failed`, without running any node: the caller is told to re-submit it. The checkpoint
    /// keeps the version that wrote it.
    async fn fail_incompatible(
        &self,
        run_id: &str,
        loaded: Loaded<RagCheckpoint>,
        incompatible: Incompatible,
    ) -> Result<RunResponse, EngineError> {
        tracing::warn!(
            run_id,
            stored = %incompatible.stored,
            current = %incompatible.current,
            "run of an incompatible workflow version: failing it"
        );
        let now = self.clock.now_ms();
        let mut session =
            Session::lock(self.store, run_id, &loaded, self.lease_until(now), now).await?;
        let mut cp = loaded.checkpoint;
        cp.phase = Phase::Failed;
        cp.failure = Some(NodeFailure {
            node: FailedAt::Version,
            class: ErrorClass::Permanent,
            message: incompatible.to_string(),
        });
        session.save(&cp, true).await?;
        Ok(self.respond(&cp))
    }

    /// Marks a run `failed` with `reason` (a poison message), unless it already ended or
    /// another invocation holds it. A run that does not exist yet is stored as failed when its
    /// request is known, so its status tells the caller why.
    pub(crate) async fn mark_failed(
        &self,
        run_id: &str,
        reason: &str,
        request: Option<RunRequest>,
    ) -> Result<(), EngineError> {
        let failure = NodeFailure {
            node: FailedAt::Queue,
            class: ErrorClass::Permanent,
            message: reason.to_owned(),
        };
        let Some(loaded) = Session::load::<RagCheckpoint>(self.store, run_id).await? else {
            let Some(request) = request else {
                return Err(EngineError::NotFound {
                    run_id: run_id.to_owned(),
                });
            };
            let mut cp = self.new_checkpoint(self.graph, &Caller::Anonymous, run_id, request);
            cp.phase = Phase::Failed;
            cp.failure = Some(failure);
            let body = encode(run_id, &cp)?;
            return self
                .store
                .put(&run_key(run_id), 0, &body, None)
                .await
                .map(|_| ())
                .map_err(|e| match e {
                    StoreError::Conflict { .. } => EngineError::Lost {
                        run_id: run_id.to_owned(),
                    },
                    other => EngineError::Store(other),
                });
        };
        let mut cp = loaded.checkpoint.clone();
        if matches!(cp.phase, Phase::Finished | Phase::Failed) {
            return Ok(());
        }
        let mut session = Session::lock(
            self.store,
            run_id,
            &loaded,
            self.lease_until(self.clock.now_ms()),
            self.clock.now_ms(),
        )
        .await?;
        cp.phase = Phase::Failed;
        cp.failure = Some(failure);
        session.save(&cp, true).await
    }

    /// The stored state of a run. For a workflow of one caller ([`Workflow::for_caller`]),
    /// another caller's run is [`EngineError::NotFound`], exactly like a run that does not
    /// exist, so its existence is not revealed; otherwise (the CLI, which owns its local
    /// store) any run is read, whoever started it.
    pub async fn status(&self, run_id: &str) -> Result<RunResponse, EngineError> {
        Ok(self.respond(&self.read(run_id).await?))
    }

    /// The passages a run's answer cites, with their text, in citation order (read like
    /// [`Workflow::status`]).
    pub(crate) async fn passages(&self, run_id: &str) -> Result<Vec<CitedPassage>, EngineError> {
        Ok(self.read(run_id).await?.state.cited_passages())
    }

    /// The checkpoint of `run_id`, if this workflow's caller may read it.
    pub(crate) async fn read(&self, run_id: &str) -> Result<RagCheckpoint, EngineError> {
        let not_found = || EngineError::NotFound {
            run_id: run_id.to_owned(),
        };
        let loaded = Session::load::<RagCheckpoint>(self.store, run_id)
            .await?
            .ok_or_else(not_found)?;
        if let Some(caller) = self.caller {
            if loaded.checkpoint.state.caller != *caller {
                return Err(not_found());
            }
        }
        Ok(loaded.checkpoint)
    }

    fn new_checkpoint(
        &self,
        graph: &RagGraph,
        caller: &Caller,
        run_id: &str,
        request: RunRequest,
    ) -> RagCheckpoint {
        let mut state = RagState::new(request);
        state.caller = caller.clone();
        state.continue_on_deadline = self.continue_on_deadline;
        state.kb_version = graph.kb_version();
        state.retrieval = Some(graph.retrieval_mode());
        state.thread = self.thread.cloned();
        state.created_at_ms = self.clock.now_ms();
        let mut cp = Checkpoint::new(run_id, crate::engine::Graph::start(graph, &state), state);
        cp.workflow_version = Some(graph.workflow_version().clone());
        cp
    }

    /// The invocation's budget, with the token limit narrowed by the run's own `max_tokens`.
    fn run_budget(&self, cp: &RagCheckpoint, budget: &Budget) -> Budget {
        budget.with_max_tokens(cp.state.request.token_budget(budget.max_tokens))
    }

    fn lease(&self, budget: &Budget) -> Lease {
        self.lease_until(budget.deadline_ms)
    }

    pub(super) fn lease_until(&self, deadline_ms: u64) -> Lease {
        let grace = u64::try_from(self.lease_grace.as_millis()).unwrap_or(u64::MAX);
        Lease {
            owner: uuid::Uuid::new_v4().to_string(),
            expires_at_ms: deadline_ms.saturating_add(grace),
        }
    }

    pub(super) fn respond(&self, cp: &RagCheckpoint) -> RunResponse {
        RunResponse::from_checkpoint(cp, self.graph.provider())
    }
}

fn encode(run_id: &str, cp: &RagCheckpoint) -> Result<Vec<u8>, EngineError> {
    serde_json::to_vec(cp).map_err(|e| EngineError::Corrupt {
        run_id: run_id.to_owned(),
        message: e.to_string(),
    })
}

/// Records a run's question, answer and status on its workflow span, and hands the response on.
fn traced(span: &tracing::Span, response: RunResponse) -> RunResponse {
    crate::genai::record_io(
        span,
        &response.question,
        &response.answer,
        response.status.as_str(),
    );
    span.record("outcome", "ok");
    response
}
