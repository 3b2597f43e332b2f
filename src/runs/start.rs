//! Starting a run: its admission, then running it. Every entry point that starts a run (the
//! HTTP API's `POST /workflow/run` and `POST /workflow/runs`, the stream function, the CLI's
//! `ask`) goes through [`Runs::admit`], so none can skip or reorder a step:
//!
//! 1. the caller's request rate (`MAX_REQUESTS_PER_CALLER_PER_MINUTE`), counted before
//!    anything else, so even a request that turns out invalid counts;
//! 2. the request as the entry point read it (an invalid body or key is refused here);
//! 3. the `Idempotency-Key`: a repeat gets the run of its first request, never a second run;
//! 4. a slot of the caller's active runs (`MAX_ACTIVE_RUNS_PER_CALLER`) for a new run;
//! 5. the thread turn, when the request names a thread (busy while its last turn runs).
//!
//! [`Runs::run`] then runs an admitted request within a budget (the stream function and
//! `ask --stream` pass a channel for the run's events); [`Runs::start`] is both at once. A new
//! run that fails gives its thread turn back ([`super::thread::Threads::abandon`]), whichever
//! entry point started it. [`Runs::submit`] stores an asynchronous run and queues it instead.

use super::active::{ActiveRuns, Admission as Slots};
use super::idempotency::{self, Claim};
use super::input::RunInput;
use super::queue::{WorkMessage, WorkQueue};
use super::ran::Answer;
use super::rate_limit;
use super::refusal::Refusal;
use super::service::Runs;
use crate::engine::{Budget, EngineError};
use crate::rag::ThreadContext;
use crate::rag::{Caller, Events, RunRequest, RunResponse};

/// A run request past its admission: who asks, which run, and what to run.
#[derive(Debug)]
pub(crate) struct Admitted {
    caller: Caller,
    run: Claimed,
    request: RunRequest,
    thread: Option<ThreadContext>,
}

impl Admitted {
    /// The run's id (known before it runs: the stream function names it in a header).
    pub(crate) fn run_id(&self) -> &str {
        match &self.run {
            Claimed::New(id) | Claimed::Repeat(id) => id,
        }
    }
}

/// The run a request is about.
#[derive(Debug)]
pub(super) enum Claimed {
    /// A new run with this id (it holds a slot of the caller's active runs).
    New(String),
    /// A repeat of an earlier request with the same `Idempotency-Key`, whose run exists.
    Repeat(String),
}

/// What an asynchronous run request got.
#[derive(Debug)]
pub(crate) enum Submitted {
    /// The run is stored and queued (or, for a repeat, exists but cannot be read now).
    Accepted(String),
    /// A repeat: the run of the first request, as it stands.
    Known(Box<RunResponse>),
}

impl Runs {
    /// Admits a run request of `caller` (see the module doc for the order of the checks).
    pub(crate) async fn admit(
        &self,
        caller: Caller,
        input: RunInput<'_>,
    ) -> Result<Admitted, Refusal> {
        self.count_request(&caller).await?;
        let request = input.request?;
        let key = input.key?;
        let run = self.claim(&caller, key, input.body).await?;
        let thread = match (&run, &request.thread_id) {
            (Claimed::New(run_id), Some(thread_id)) => Some(
                self.threads()
                    .begin(&caller, thread_id, run_id, &request.question)
                    .await?,
            ),
            _ => None,
        };
        Ok(Admitted {
            caller,
            run,
            request,
            thread,
        })
    }

    /// Admits a run request of `caller` and runs it within `budget` (see [`Runs::run`]).
    pub(crate) async fn start(
        &self,
        caller: Caller,
        input: RunInput<'_>,
        budget: &Budget,
        queue: Option<&dyn WorkQueue>,
    ) -> Result<Answer, Refusal> {
        let admitted = self.admit(caller, input).await?;
        self.run(admitted, budget, queue, Events::default()).await
    }

    /// Runs an admitted request within `budget`, telling `events` about it as it goes. A
    /// repeat is never a second run: the same run is finished if it can be advanced. A new run
    /// that fails gives its thread turn back. A suspended run gets its continuation queued on
    /// `queue` ([`Runs::finish`]).
    pub(crate) async fn run(
        &self,
        admitted: Admitted,
        budget: &Budget,
        queue: Option<&dyn WorkQueue>,
        events: Events,
    ) -> Result<Answer, Refusal> {
        let Admitted {
            caller,
            run,
            request,
            thread,
        } = admitted;
        let graph = self.graph_for(events);
        let workflow = self.workflow_on(&graph);
        let run_id = match run {
            Claimed::New(run_id) => run_id,
            Claimed::Repeat(run_id) => {
                let response = match workflow.resume(&run_id, budget).await {
                    Err(EngineError::NotFound { .. }) => {
                        workflow
                            .for_caller(&caller)
                            .run_new(&run_id, request, budget)
                            .await
                    }
                    other => other,
                };
                return match response {
                    Err(EngineError::Busy { .. }) => Ok(Answer::Busy(run_id)),
                    other => Ok(Answer::Ran(Box::new(self.finish(other?, queue).await))),
                };
            }
        };
        let response = workflow
            .for_caller(&caller)
            .in_thread(thread.as_ref())
            .run_new(&run_id, request, budget)
            .await;
        if response.is_err() {
            self.give_back(&caller, thread.as_ref(), &run_id).await;
        }
        Ok(Answer::Ran(Box::new(self.finish(response?, queue).await)))
    }

    /// Admits an asynchronous run request of `caller`, stores its run and queues it on
    /// `queue` for a worker (refused without a queue, before anything is counted).
    pub(crate) async fn submit(
        &self,
        caller: Caller,
        input: RunInput<'_>,
        queue: Option<&dyn WorkQueue>,
    ) -> Result<Submitted, Refusal> {
        let Some(queue) = queue else {
            return Err(Refusal::NoQueue);
        };
        let Admitted {
            caller,
            run,
            request,
            thread,
        } = self.admit(caller, input).await?;
        let run_id = match run {
            Claimed::New(run_id) => run_id,
            Claimed::Repeat(run_id) => {
                return Ok(
                    match self.workflow().for_caller(&caller).status(&run_id).await {
                        Ok(response) => Submitted::Known(Box::new(response)),
                        Err(_) => Submitted::Accepted(run_id),
                    },
                )
            }
        };
        let stored = self
            .workflow()
            .for_caller(&caller)
            .in_thread(thread.as_ref())
            .submit(&run_id, request.clone())
            .await;
        if stored.is_err() {
            self.give_back(&caller, thread.as_ref(), &run_id).await;
        }
        stored?;
        let message = WorkMessage {
            run_id: run_id.clone(),
            request: Some(request),
        };
        queue.send(&message).await.map_err(|e| {
            tracing::error!(run_id, error = %e, "could not queue the run");
            e
        })?;
        tracing::info!(run_id, caller = caller.kind(), "run queued");
        Ok(Submitted::Accepted(run_id))
    }

    /// Counts a request of `caller` in its one-minute window
    /// (`MAX_REQUESTS_PER_CALLER_PER_MINUTE`), refusing it when the window is full.
    pub(super) async fn count_request(&self, caller: &Caller) -> Result<(), Refusal> {
        if let Some(limit) = self.admission().max_requests_per_minute {
            rate_limit::count(self.store(), caller, limit, self.clock().now_ms()).await?;
        }
        Ok(())
    }

    /// A new run id of `caller` for `key` (a fork's), admitted under its active-run limit, or
    /// the run an earlier request with the same key made.
    pub(super) async fn claim_run(
        &self,
        caller: &Caller,
        key: Option<&str>,
        body: &[u8],
    ) -> Result<Claimed, Refusal> {
        self.claim(caller, key, body).await
    }

    /// Maps the `Idempotency-Key` (if any) of `caller` to a run, and admits a new run under
    /// the caller's active-run limit.
    async fn claim(
        &self,
        caller: &Caller,
        key: Option<&str>,
        body: &[u8],
    ) -> Result<Claimed, Refusal> {
        let fresh = uuid::Uuid::new_v4().to_string();
        let run_id = match key {
            None => fresh,
            Some(key) => match idempotency::claim(self.store(), caller, key, body, &fresh).await? {
                Claim::New(id) => id,
                Claim::Existing(id) => {
                    // A repeat whose first request never got its run stored (refused by the
                    // limit, or cut short) starts that run now, under the limit like a new one.
                    match self.workflow().for_caller(caller).status(&id).await {
                        Ok(_) => return Ok(Claimed::Repeat(id)),
                        Err(EngineError::NotFound { .. }) => id,
                        Err(e) => return Err(e.into()),
                    }
                }
                Claim::Mismatch => return Err(Refusal::KeyReused),
            },
        };
        if let Some(limit) = self.admission().max_active_runs {
            let now_ms = self.clock().now_ms();
            let slots = ActiveRuns::new(self.store(), limit);
            if let Slots::Full {
                limit,
                active,
                retry_at_ms,
                free_by_ms,
            } = slots.admit(caller, &run_id, now_ms).await?
            {
                tracing::info!(caller = caller.kind(), limit, "active-run limit reached");
                return Err(Refusal::TooManyActive {
                    limit,
                    active,
                    retry_at_ms,
                    free_by_ms,
                });
            }
        }
        Ok(Claimed::New(run_id))
    }

    /// Forgets the thread turn of a new run that could not be run, so its thread is not busy
    /// for nothing.
    async fn give_back(&self, caller: &Caller, thread: Option<&ThreadContext>, run_id: &str) {
        if let Some(thread) = thread {
            self.threads()
                .abandon(caller, &thread.thread_id, run_id)
                .await;
        }
    }
}
