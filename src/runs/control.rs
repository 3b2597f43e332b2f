//! Reading and stopping runs, and reading and deleting threads: a run's status, its steps a
//! page at a time, the passages it cites, the caller's runs newest first, cancel; a thread's
//! turns, the caller's threads, delete. With a caller, another caller's run or thread is not found; without one
//! (the CLI, which owns its local store) any run is read.

use super::cancel::Cancel;
use super::history::StepPage;
use super::listing::{runs_owner, RunSummary};
use super::refusal::Refusal;
use super::service::Runs;
use super::thread::{ThreadHead, ThreadPage, TurnRecord};
use crate::engine::EngineError;
use crate::rag::{Caller, CitedPassage, RunResponse, RunStatus};
use serde::Serialize;

/// One page of a caller's runs, newest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RunPage {
    /// The runs.
    pub(crate) runs: Vec<RunSummary>,
    /// Pass back as `cursor` for the next page; `None` on the last.
    pub(crate) next_cursor: Option<String>,
}

impl Runs {
    /// The run `run_id` as stored (of `caller`, when given).
    pub(crate) async fn status(
        &self,
        caller: Option<&Caller>,
        run_id: &str,
    ) -> Result<RunResponse, Refusal> {
        let workflow = self.workflow_for(caller);
        Ok(workflow.status(run_id).await?)
    }

    /// The passages the run `run_id` (of `caller`) cites, with their text.
    pub(crate) async fn passages(
        &self,
        caller: &Caller,
        run_id: &str,
    ) -> Result<Vec<CitedPassage>, Refusal> {
        Ok(self.workflow().for_caller(caller).passages(run_id).await?)
    }

    /// Up to `limit` steps of the run `run_id` (of `caller`) after step number `after`.
    pub(crate) async fn steps(
        &self,
        caller: &Caller,
        run_id: &str,
        after: u32,
        limit: u32,
    ) -> Result<StepPage, Refusal> {
        let run = self.status(Some(caller), run_id).await?;
        Ok(StepPage::of(&run, after, limit))
    }

    /// Up to `limit` of `caller`'s runs, newest first, only those with `status` when given,
    /// after `cursor` (the `next_cursor` of the page before), through the store's owner index:
    /// never a scan.
    pub(crate) async fn list(
        &self,
        caller: &Caller,
        status: Option<RunStatus>,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<RunPage, Refusal> {
        let page = self
            .store()
            .list_owned(
                &runs_owner(caller),
                status.map(Into::into),
                limit as usize,
                cursor,
            )
            .await
            .map_err(EngineError::Store)?;
        Ok(RunPage {
            runs: page.items.iter().filter_map(RunSummary::of).collect(),
            next_cursor: page.cursor,
        })
    }

    /// Cancels the run `run_id` (of `caller`, when given); a cancelled run's completion event
    /// is sent (a failure is logged: the run's next delivery or the sweep sends it).
    pub(crate) async fn cancel(
        &self,
        caller: Option<&Caller>,
        run_id: &str,
    ) -> Result<Cancel, Refusal> {
        let workflow = self.workflow_for(caller);
        let outcome = workflow.cancel(run_id).await?;
        if let Cancel::Cancelled(response) | Cancel::AlreadyCancelled(response) = &outcome {
            if let Err(e) = self.notify(&response.run_id).await {
                tracing::warn!(run_id, error = %e, "completion event not sent yet");
            }
        }
        Ok(outcome)
    }

    /// `caller`'s thread `thread_id`: its head and up to `limit` turns after turn `after`.
    pub(crate) async fn thread(
        &self,
        caller: &Caller,
        thread_id: &str,
        after: u32,
        limit: usize,
    ) -> Result<(ThreadHead, Vec<TurnRecord>), Refusal> {
        Ok(self.threads().show(caller, thread_id, after, limit).await?)
    }

    /// Up to `limit` of `caller`'s threads, most recently updated first, after `cursor`.
    pub(crate) async fn thread_list(
        &self,
        caller: &Caller,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ThreadPage, Refusal> {
        Ok(self.threads().list(caller, limit, cursor).await?)
    }

    /// Deletes `caller`'s thread `thread_id`, its turns and its runs' checkpoints (refused
    /// while a turn is unfinished).
    pub(crate) async fn delete_thread(
        &self,
        caller: &Caller,
        thread_id: &str,
    ) -> Result<(), Refusal> {
        self.threads().delete(caller, thread_id).await?;
        tracing::info!(caller = caller.kind(), "thread deleted");
        Ok(())
    }
}
