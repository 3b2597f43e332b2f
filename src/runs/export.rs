//! Runs read back whole to become eval sets (`bounded-rag runs export`): a caller's runs, newest
//! first, through the owner index ([`super::listing`]), only those with a status, created since a
//! moment, or that are turns of a thread, each with its response (question, answer, citations)
//! and creation time. The shape of an eval line is the entry point's.
//!
//! The status filter and the creation time come from the index (no read of a run left out by
//! them; paging stops at the first run older than `since`, since the index is newest first); the
//! thread is only in the run itself, which is read anyway for its question and citations.

use super::listing::{created_ms, runs_owner, RunSummary};
use super::refusal::Refusal;
use super::service::Runs;
use crate::engine::EngineError;
use crate::rag::{Caller, RunResponse, RunStatus};

/// Runs listed per page read from the owner index.
const EXPORT_PAGE: u32 = 100;

/// Which runs to export; every field that is set must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RunFilter {
    /// Only runs with this status.
    pub(crate) status: Option<RunStatus>,
    /// Only runs created at or after this moment (epoch ms).
    pub(crate) since_ms: Option<u64>,
    /// Only runs that are turns of this thread.
    pub(crate) thread_id: Option<String>,
}

/// One exported run.
#[derive(Debug, Clone)]
pub(crate) struct ExportedRun {
    /// When it was created (RFC 3339, UTC).
    pub(crate) created_at: String,
    /// The run as stored.
    pub(crate) response: RunResponse,
}

/// One page of exported runs, newest first.
#[derive(Debug, Clone)]
pub(crate) struct ExportPage {
    /// The runs of this page that pass the filter (possibly none).
    pub(crate) runs: Vec<ExportedRun>,
    /// Pass back as `cursor` for the next page; `None` on the last.
    pub(crate) next_cursor: Option<String>,
}

impl Runs {
    /// One page of `caller`'s runs that pass `filter`, newest first, after `cursor` (the
    /// `next_cursor` of the page before). A run that expired or was deleted after it was
    /// listed, or whose status changed from the one filtered on, is left out.
    pub(crate) async fn export(
        &self,
        caller: &Caller,
        filter: &RunFilter,
        cursor: Option<&str>,
    ) -> Result<ExportPage, Refusal> {
        let page = self
            .store()
            .list_owned(
                &runs_owner(caller),
                filter.status.map(Into::into),
                EXPORT_PAGE as usize,
                cursor,
            )
            .await
            .map_err(EngineError::Store)?;
        let workflow = self.workflow().for_caller(caller);
        let mut runs = Vec::new();
        let mut next_cursor = page.cursor;
        for listed in &page.items {
            if filter
                .since_ms
                .is_some_and(|since| created_ms(listed) < since)
            {
                next_cursor = None;
                break;
            }
            let Some(summary) = RunSummary::of(listed) else {
                continue;
            };
            let response = match workflow.status(&summary.run_id).await {
                Ok(response) => response,
                Err(EngineError::NotFound { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            if filter.status.is_some_and(|s| s != response.status)
                || filter
                    .thread_id
                    .as_ref()
                    .is_some_and(|thread| response.metadata.thread_id.as_ref() != Some(thread))
            {
                continue;
            }
            runs.push(ExportedRun {
                created_at: summary.created_at,
                response,
            });
        }
        Ok(ExportPage { runs, next_cursor })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::rag::{RagGraph, RagLimits, RunRequest};
    use crate::runs::{RunIndexer, RunInput};
    use crate::store::MemoryStore;
    use std::sync::Arc;

    fn runs(clock: Arc<FakeClock>) -> Runs {
        let kb = Arc::new(crate::ingest::sample_kb().unwrap());
        let graph = RagGraph::new(
            Arc::new(crate::llm::OfflineModel),
            kb,
            None,
            RagLimits::default(),
        );
        let store = Arc::new(MemoryStore::new().with_indexer(Arc::new(RunIndexer)));
        Runs::new(&crate::config::Settings::default(), graph, store, clock)
    }

    async fn ask(runs: &Runs, question: &str, thread: Option<&str>) -> String {
        let mut request = RunRequest::new(question);
        request.thread_id = thread.map(str::to_owned);
        let budget = runs.budget(None);
        let answer = runs
            .start(Caller::Anonymous, RunInput::request(request), &budget, None)
            .await
            .unwrap();
        match answer {
            crate::runs::Answer::Ran(ran) => ran.response.run_id,
            crate::runs::Answer::Busy(id) => panic!("busy {id}"),
        }
    }

    async fn all(runs: &Runs, filter: &RunFilter) -> Vec<String> {
        let (mut ids, mut cursor) = (Vec::new(), None);
        loop {
            let page = runs
                .export(&Caller::Anonymous, filter, cursor.as_deref())
                .await
                .unwrap();
            ids.extend(page.runs.into_iter().map(|r| r.response.run_id));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return ids,
            }
        }
    }

    #[tokio::test]
    async fn runs_are_exported_newest_first_by_time_thread_and_status() {
        let clock = Arc::new(FakeClock::at_ms(1_800_000_000_000));
        let runs = runs(clock.clone());
        let first = ask(&runs, "What causes patch canker in durian?", None).await;
        clock.advance(std::time::Duration::from_secs(1));
        let second = ask(&runs, "Which fungus causes pink disease?", Some("t")).await;
        clock.advance(std::time::Duration::from_secs(1));
        let third = ask(&runs, "How are mealybugs controlled?", None).await;

        let every = all(&runs, &RunFilter::default()).await;
        assert_eq!(every, [third.clone(), second.clone(), first.clone()]);
        let since = RunFilter {
            since_ms: Some(1_800_000_001_000),
            ..RunFilter::default()
        };
        assert_eq!(all(&runs, &since).await, [third.clone(), second.clone()]);
        let thread = RunFilter {
            thread_id: Some("t".into()),
            ..RunFilter::default()
        };
        assert_eq!(all(&runs, &thread).await, [second]);
        let failed = RunFilter {
            status: Some(RunStatus::Failed),
            ..RunFilter::default()
        };
        assert!(all(&runs, &failed).await.is_empty());
        // Another caller's runs are not exported.
        let other = runs
            .export(&Caller::Jwt("other".into()), &RunFilter::default(), None)
            .await
            .unwrap();
        assert!(other.runs.is_empty() && other.next_cursor.is_none());
    }
}
