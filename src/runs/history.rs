//! A run's history as callers read it: its checkpointed step records, a page at a time
//! (`GET /workflow/runs/{run_id}/steps?after=N`), and the summary of a run in the caller's
//! list (`GET /workflow/runs`).

use crate::rag::{ForkedFrom, RagNode, RunResponse, RunStatus, Tokens};
use serde::Serialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Most steps one page holds, and the default.
pub(crate) const MAX_STEPS_PER_PAGE: u32 = 100;

/// One checkpointed step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct StepEntry {
    /// Its number in the run, from 1 (the `after` of the next page is the last one's).
    pub index: u32,
    /// The node that ran.
    pub name: RagNode,
    /// When it started (RFC 3339, UTC).
    pub started_at: String,
    /// When it ended (RFC 3339, UTC).
    pub finished_at: String,
    /// Seconds it took, retries and backoff included.
    pub duration: f64,
    /// Node-specific facts.
    pub details: serde_json::Value,
    /// Tokens its model calls used.
    pub tokens: Tokens,
    /// Model replies it received.
    pub model_calls: u32,
}

/// A page of a run's steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct StepPage {
    /// Run id.
    pub run_id: String,
    /// The run's status now.
    pub status: RunStatus,
    /// Steps after the requested one, oldest first.
    pub steps: Vec<StepEntry>,
    /// `after` of the next page when more steps are stored now; `null` on the last page
    /// (a run that is still going may add more: ask again with the last `index`).
    pub next_after: Option<u32>,
    /// The run and step this run was forked from: its steps up to that one are the
    /// original's, as they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkedFrom>,
}

impl StepPage {
    /// Up to `limit` steps of `run` after step number `after`.
    pub(crate) fn of(run: &RunResponse, after: u32, limit: u32) -> Self {
        let start = after as usize;
        let end = start.saturating_add(limit as usize);
        let steps: Vec<StepEntry> = run
            .workflow_steps
            .iter()
            .enumerate()
            .skip(start)
            .take(end - start)
            .map(|(i, record)| StepEntry {
                index: i as u32 + 1,
                name: record.name,
                finished_at: finished_at(&record.timestamp, record.processing_time),
                started_at: record.timestamp.clone(),
                duration: record.processing_time,
                details: record.details.clone(),
                tokens: Tokens::from(&record.usage),
                model_calls: record.usage.model_calls,
            })
            .collect();
        let next_after = (run.workflow_steps.len() > end).then_some(end as u32);
        Self {
            run_id: run.run_id.clone(),
            status: run.status,
            steps,
            next_after,
            forked_from: run.metadata.forked_from.clone(),
        }
    }
}

/// `started` plus `seconds`, in RFC 3339; `started` itself if it cannot be read.
fn finished_at(started: &str, seconds: f64) -> String {
    OffsetDateTime::parse(started, &Rfc3339)
        .ok()
        .and_then(|t| {
            let took = time::Duration::checked_seconds_f64(seconds.max(0.0))?;
            t.checked_add(took)?.format(&Rfc3339).ok()
        })
        .unwrap_or_else(|| started.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Checkpoint, StepRecord};
    use crate::rag::{RagState, RunRequest};
    use crate::usage::Usage;

    fn run_of(steps: usize) -> RunResponse {
        let mut cp: Checkpoint<RagState, RagNode> = Checkpoint::new(
            "r",
            RagNode::RouteQuestion,
            RagState::new(RunRequest::new("q")),
        );
        for i in 0..steps {
            let usage = Usage {
                prompt_tokens: 10,
                completion_tokens: 1,
                model_calls: 1,
                ..Usage::default()
            };
            cp.records.push(StepRecord::new(
                RagNode::RouteQuestion,
                1_800_000_000_000_000 + i as u64 * 1_000_000,
                0.25,
                serde_json::json!({}),
                usage,
            ));
        }
        RunResponse::from_checkpoint(&cp, "test")
    }

    #[test]
    fn pages_follow_after_and_end_with_no_next() {
        let run = run_of(5);
        let first = StepPage::of(&run, 0, 2);
        let indexes: Vec<u32> = first.steps.iter().map(|s| s.index).collect();
        assert_eq!((indexes, first.next_after), (vec![1, 2], Some(2)));
        let step = &first.steps[0];
        assert_eq!(step.started_at, "2027-01-15T08:00:00Z");
        assert_eq!(step.finished_at, "2027-01-15T08:00:00.25Z");
        assert_eq!((step.tokens.total, step.model_calls), (11, 1));
        let last = StepPage::of(&run, 4, 2);
        assert_eq!((last.steps.len(), last.next_after), (1, None));
        assert_eq!(last.steps[0].index, 5);
        let exact = StepPage::of(&run, 3, 2);
        assert_eq!((exact.steps.len(), exact.next_after), (2, None));
        let past = StepPage::of(&run, 9, 2);
        assert!(past.steps.is_empty() && past.next_after.is_none());
    }
}
