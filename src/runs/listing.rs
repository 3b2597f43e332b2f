//! A caller's runs, newest first (`GET /workflow/runs`): what a run checkpoint is listed under
//! in the store's owner index ([`RunIndexer`]), and the summary of each listed run.
//!
//! A run is listed under `runs#<caller digest>` (the digest `active#` keys use), sorted by its
//! creation time then id, with its status, so the list and its status filter need no read of
//! the runs themselves and no scan.

use crate::clock::rfc3339_ms;
use crate::engine::Phase;
use crate::rag::{status_from, Caller, Outcome, RunStatus};
use crate::store::{Indexer, Listed, Listing, OwnerKey, StoreKey};
use serde::{Deserialize, Serialize};

/// The owner the runs of `caller` are listed under.
pub(crate) fn runs_owner(caller: &Caller) -> String {
    OwnerKey::Runs(&caller.digest()).to_string()
}

/// Lists run checkpoints (`run#` keys) by caller; other items are not listed.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunIndexer;

/// The few fields of a checkpoint a listing needs (the rest is skipped, not decoded).
#[derive(Deserialize)]
struct Peek {
    phase: Phase,
    state: PeekState,
}

#[derive(Deserialize)]
struct PeekState {
    #[serde(default)]
    outcome: Option<Outcome>,
    #[serde(default)]
    caller: Caller,
    #[serde(default)]
    created_at_ms: u64,
}

impl Indexer for RunIndexer {
    fn listing(&self, key: &str, body: &[u8]) -> Option<Listing> {
        let Some(StoreKey::Run(run_id)) = StoreKey::parse(key) else {
            return None;
        };
        let peek: Peek = serde_json::from_slice(body).ok()?;
        Some(Listing {
            owner: runs_owner(&peek.state.caller),
            sort: format!("{:015}#{run_id}", peek.state.created_at_ms),
            status: status_from(peek.phase, peek.state.outcome).into(),
        })
    }
}

/// One run of a caller's list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RunSummary {
    /// Run id.
    pub run_id: String,
    /// Its status when it was last written.
    pub status: String,
    /// When it was created (RFC 3339, UTC; the Unix epoch for runs stored before this was
    /// recorded).
    pub created_at: String,
    /// Where to read it.
    pub status_url: String,
}

impl RunSummary {
    /// The summary of a listed run; `None` for an item that is not a run's.
    pub(crate) fn of(listed: &Listed) -> Option<Self> {
        let Some(StoreKey::Run(run_id)) = StoreKey::parse(&listed.key) else {
            return None;
        };
        Some(Self {
            run_id: run_id.to_owned(),
            status: listed.status.as_str().to_owned(),
            created_at: rfc3339_ms(created_ms(listed)),
            status_url: format!("/workflow/runs/{run_id}"),
        })
    }
}

/// When a listed run was created (epoch ms, from its sort value; 0 for runs stored before this
/// was recorded).
pub(crate) fn created_ms(listed: &Listed) -> u64 {
    listed
        .sort
        .split_once('#')
        .and_then(|(ms, _)| ms.parse().ok())
        .unwrap_or(0)
}

/// A status the list can be filtered by, from its wire name.
pub(crate) fn parse_status(text: &str) -> Option<RunStatus> {
    RunStatus::ALL.into_iter().find(|s| s.as_str() == text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Checkpoint;
    use crate::rag::{RagCheckpoint, RagNode, RagState, RunRequest};

    #[test]
    fn a_run_is_listed_under_its_caller_by_creation_time_with_its_status() {
        let mut cp: RagCheckpoint = Checkpoint::new(
            "r-1",
            RagNode::RouteQuestion,
            RagState::new(RunRequest::new("q")),
        );
        cp.state.caller = Caller::Jwt("me".into());
        cp.state.created_at_ms = 1_800_000_000_123;
        let body = serde_json::to_vec(&cp).unwrap();
        let listing = RunIndexer.listing("run#r-1", &body).unwrap();
        assert_eq!(listing.owner, runs_owner(&Caller::Jwt("me".into())));
        assert_eq!(listing.sort, "001800000000123#r-1");
        assert_eq!(listing.status, "running");
        assert_eq!(RunIndexer.listing("idem#r-1", &body), None);
        assert_eq!(RunIndexer.listing("run#r-1", b"{}"), None);

        let listed = Listed {
            key: "run#r-1".into(),
            sort: listing.sort,
            status: listing.status,
        };
        let summary = RunSummary::of(&listed).unwrap();
        assert_eq!(summary.created_at, "2027-01-15T08:00:00.123Z");
        assert_eq!(created_ms(&listed), 1_800_000_000_123);
        assert_eq!(summary.status_url, "/workflow/runs/r-1");
        assert_eq!(parse_status("best_effort"), Some(RunStatus::BestEffort));
        assert_eq!(parse_status("done"), None);
    }
}
