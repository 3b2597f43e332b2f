//! The sync function's records ([`SyncRecords`]): per destination (a knowledge base's
//! `s3://` location), one record per source document, one control record (the publish lease
//! and counters) and one record per finished publish (a job). Memory and file stores keep them
//! as items of their own (`local`), DynamoDB under one partition per destination (in
//! `dynamodb::sync_records`); the keys are [`StoreKey::Sync`](super::StoreKey::Sync) and
//! [`SortKey`](super::SortKey)'s sync kinds.
//!
//! Every write that decides something is conditional (a document's `rev`, the publish lease),
//! so a redelivered message or a second invocation can never record a document twice or
//! publish concurrently. What a failure or a job's statistics say is the sync's business: the
//! store keeps them as JSON (`reason_json`, `summary_json`) without reading them.

mod local;

use super::StoreError;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Where a document is in its sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocPhase {
    /// An invocation holds it (until `lease_until`).
    Processing,
    /// Read (or skipped for one of ingest's reasons) and its passages embedded.
    Done,
    /// Its reader failed; typed reason recorded. Never retried until it changes.
    Failed,
    /// Removed from the source.
    Deleted,
}

impl DocPhase {
    /// The stored word.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Processing => "processing",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Deleted => "deleted",
        }
    }

    /// The phase a stored word names.
    pub(crate) fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "processing" => Self::Processing,
            "done" => Self::Done,
            "failed" => Self::Failed,
            "deleted" => Self::Deleted,
            _ => return None,
        })
    }
}

/// One source document's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocRecord {
    /// The key relative to the source prefix.
    pub rel: String,
    /// The write it reflects.
    pub object_version: String,
    /// S3's event order on the key (hex; may be empty).
    pub sequencer: String,
    /// Where it is.
    pub phase: DocPhase,
    /// SHA-256 of its bytes (hex) once read.
    pub hash: String,
    /// Why it failed: the sync's typed reason, as JSON.
    pub reason_json: Option<String>,
    /// Claims of this write so far.
    pub attempts: u32,
    /// The processing lease's end (epoch ms).
    pub lease_until: u64,
    /// Bumped by every write; writes are conditional on it.
    pub rev: u64,
}

/// A destination's control record: the publish lease and the counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncControl {
    /// Document changes recorded so far.
    pub changes: u64,
    /// `changes` as of the last publish.
    pub published_changes: u64,
    /// Publishes so far.
    pub publishes: u64,
    /// The version last published.
    pub version: Option<String>,
    /// Passages embedded so far.
    pub embedded: u64,
    /// Passages served by the cache so far.
    pub cached: u64,
    /// `embedded` as of the last publish.
    pub published_embedded: u64,
    /// `cached` as of the last publish.
    pub published_cached: u64,
}

/// A finished publish's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    /// 1, 2, ...
    pub number: u64,
    /// When it took the lease (epoch ms).
    pub started_at: u64,
    /// When it ended (epoch ms).
    pub finished_at: u64,
    /// The statistics: the sync's summary, as JSON.
    pub summary_json: String,
}

/// The end of a publish, as [`SyncRecords::finish_publish`] records it.
#[derive(Debug, Clone, Copy)]
pub struct PublishEnd<'a> {
    /// The control record as the lease was taken (its counters are what the publish consumed).
    pub taken: &'a SyncControl,
    /// The version now served, when the publish wrote or kept one.
    pub version: Option<&'a str>,
    /// Whether the pointer moved.
    pub published: bool,
}

/// The sync function's records of every destination, each call naming its destination.
#[async_trait]
pub trait SyncRecords: Send + Sync {
    /// The record of `rel`, read strongly consistent.
    async fn doc(&self, dest: &str, rel: &str) -> Result<Option<DocRecord>, StoreError>;

    /// Every document record.
    async fn docs(&self, dest: &str) -> Result<Vec<DocRecord>, StoreError>;

    /// Writes `record` as `rev + 1` if nobody wrote the document since `expected` was read
    /// (`None`: it must not exist yet); `Ok(false)` when someone did.
    async fn put_doc(
        &self,
        dest: &str,
        record: &DocRecord,
        expected: Option<u64>,
    ) -> Result<bool, StoreError>;

    /// The control record (all zero before the first write).
    async fn control(&self, dest: &str) -> Result<SyncControl, StoreError>;

    /// Counts one recorded document change and the passages it embedded or found cached.
    async fn count_change(&self, dest: &str, embedded: u64, cached: u64) -> Result<(), StoreError>;

    /// Marks a publish as scheduled: `Ok(true)` when this call did (and must send the
    /// message), `Ok(false)` when one already is.
    async fn schedule(&self, dest: &str) -> Result<bool, StoreError>;

    /// Un-marks a publish as scheduled (its message could not be sent).
    async fn unschedule(&self, dest: &str) -> Result<(), StoreError>;

    /// Takes the publish lease for `owner` until `until` (epoch ms) if none is live at `now`,
    /// clearing `scheduled` (changes from here on schedule another publish). The control
    /// record as taken, or `None` when another publish holds the lease.
    async fn take_publish_lease(
        &self,
        dest: &str,
        owner: &str,
        now: u64,
        until: u64,
    ) -> Result<Option<SyncControl>, StoreError>;

    /// Records a finished publish and releases the lease, if `owner` still holds it:
    /// `Ok(false)` when the lease lapsed (and someone else may hold it).
    async fn finish_publish(
        &self,
        dest: &str,
        owner: &str,
        end: PublishEnd<'_>,
    ) -> Result<bool, StoreError>;

    /// Stores a job's record.
    async fn put_job(&self, dest: &str, record: &JobRecord) -> Result<(), StoreError>;

    /// Every job, oldest first.
    async fn jobs(&self, dest: &str) -> Result<Vec<JobRecord>, StoreError>;
}
