//! Continuing a run: a work queue message (a new asynchronous run, or the continuation of a
//! suspended or crashed one) and the CLI's `ask --resume`. The run is advanced within the
//! invocation's budget and ended through [`Runs::finish`], like a run started by a request.

use super::queue::{WorkMessage, WorkQueue};
use super::ran::Ran;
use super::refusal::{Invalid, Refusal};
use super::service::Runs;
use crate::engine::{Budget, EngineError};
use crate::rag::{Events, RunRequest};

impl Runs {
    /// Processes a work queue message within `budget`: creates and runs a new asynchronous run
    /// (continuing it instead when the API, or an earlier delivery, created it already), or
    /// continues a stored one. A message whose request is invalid marks its run `failed` with
    /// the reason, so its status tells the caller why.
    pub(crate) async fn work(
        &self,
        message: WorkMessage,
        budget: &Budget,
        queue: Option<&dyn WorkQueue>,
    ) -> Result<Ran, Refusal> {
        let run_id = message.run_id.as_str();
        let Some(request) = message.request else {
            return self
                .continue_run(run_id, budget, queue, Events::default())
                .await;
        };
        if let Err(e) = request.validate() {
            self.poison(run_id, &format!("invalid request: {e}"), Some(request))
                .await;
            return Err(Invalid::Field(e).into());
        }
        let workflow = self.workflow();
        let response = match workflow.run_new(run_id, request, budget).await {
            Err(EngineError::Exists { .. }) => workflow.resume(run_id, budget).await,
            other => other,
        }?;
        Ok(self.finish(response, queue).await)
    }

    /// Continues the stored run `run_id` within `budget`, telling `events` about it; a finished
    /// run is not advanced, its answer is returned as it stands.
    pub(crate) async fn continue_run(
        &self,
        run_id: &str,
        budget: &Budget,
        queue: Option<&dyn WorkQueue>,
        events: Events,
    ) -> Result<Ran, Refusal> {
        let graph = self.graph_for(events);
        let response = self.workflow_on(&graph).resume(run_id, budget).await?;
        Ok(self.finish(response, queue).await)
    }

    /// Marks the run `run_id` `failed` with `reason` (a message that can never succeed),
    /// unless it already ended or another invocation holds it. Best effort: a failure is only
    /// logged (the message goes to the dead-letter queue either way).
    pub(crate) async fn poison(&self, run_id: &str, reason: &str, request: Option<RunRequest>) {
        if let Err(e) = self.workflow().mark_failed(run_id, reason, request).await {
            tracing::warn!(run_id, error = %e, "could not mark the run failed");
        }
    }
}
