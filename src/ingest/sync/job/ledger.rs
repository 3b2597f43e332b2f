//! The records of one destination ([`Ledger`]): the store's [`SyncRecords`] (memory, file or
//! DynamoDB, see `store::sync_records`) for one knowledge base, their failures as [`JobError`]s.
//! What a failure or a job says is typed here ([`FailReason`], [`SyncSummary`]); the store
//! keeps it as JSON.
use super::error::JobError;
use crate::ingest::sync::{FailReason, SyncSummary};
use crate::store::{DocRecord, JobRecord, PublishEnd, SyncControl, SyncRecords};
use std::sync::Arc;

/// The records of one destination.
#[derive(Clone)]
pub struct Ledger {
    records: Arc<dyn SyncRecords>,
    dest: String,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger").field("dest", &self.dest).finish()
    }
}

impl Ledger {
    /// The records of destination `dest` (an `s3://` URL) in `records`.
    pub fn new(records: Arc<dyn SyncRecords>, dest: &str) -> Self {
        Self {
            records,
            dest: dest.to_owned(),
        }
    }

    /// The record of `rel`, read strongly consistent.
    pub async fn doc(&self, rel: &str) -> Result<Option<DocRecord>, JobError> {
        Ok(self.records.doc(&self.dest, rel).await?)
    }

    /// Every document record.
    pub async fn docs(&self) -> Result<Vec<DocRecord>, JobError> {
        Ok(self.records.docs(&self.dest).await?)
    }

    /// Writes `record` (rev + 1) if nobody wrote the document since `expected` was read;
    /// `Ok(false)` when someone did.
    pub(crate) async fn put_doc(
        &self,
        record: &DocRecord,
        expected: Option<u64>,
    ) -> Result<bool, JobError> {
        Ok(self.records.put_doc(&self.dest, record, expected).await?)
    }

    /// The control record.
    pub async fn control(&self) -> Result<SyncControl, JobError> {
        Ok(self.records.control(&self.dest).await?)
    }

    /// Counts one recorded document change and the passages it embedded or found cached.
    pub(crate) async fn count_change(&self, embedded: u64, cached: u64) -> Result<(), JobError> {
        Ok(self
            .records
            .count_change(&self.dest, embedded, cached)
            .await?)
    }

    /// Marks a publish as scheduled; `Ok(true)` when this call did (and must send the
    /// message), `Ok(false)` when one already is.
    pub(crate) async fn schedule(&self) -> Result<bool, JobError> {
        Ok(self.records.schedule(&self.dest).await?)
    }

    /// Un-marks a publish as scheduled (its message could not be sent).
    pub(crate) async fn unschedule(&self) -> Result<(), JobError> {
        Ok(self.records.unschedule(&self.dest).await?)
    }

    /// Takes the publish lease until `until` (epoch ms) if none is live at `now`; the control
    /// record as taken, or `None` when another publish holds the lease.
    pub(crate) async fn take_publish_lease(
        &self,
        owner: &str,
        now: u64,
        until: u64,
    ) -> Result<Option<SyncControl>, JobError> {
        Ok(self
            .records
            .take_publish_lease(&self.dest, owner, now, until)
            .await?)
    }

    /// Records a finished publish and releases the lease, if `owner` still holds it.
    pub(crate) async fn finish_publish(
        &self,
        owner: &str,
        end: PublishEnd<'_>,
    ) -> Result<(), JobError> {
        if self.records.finish_publish(&self.dest, owner, end).await? {
            Ok(())
        } else {
            Err(JobError::Transient(
                "the publish lease lapsed before the publish ended".into(),
            ))
        }
    }

    /// Stores job `record`.
    pub(crate) async fn put_job(&self, record: &JobRecord) -> Result<(), JobError> {
        Ok(self.records.put_job(&self.dest, record).await?)
    }

    /// Every job, oldest first.
    pub async fn jobs(&self) -> Result<Vec<JobRecord>, JobError> {
        Ok(self.records.jobs(&self.dest).await?)
    }
}

/// Why a document failed, as its record stores it.
pub(crate) fn reason_json(reason: &FailReason) -> String {
    serde_json::to_string(reason).expect("a reason serializes")
}

/// Why a document failed, read back from its record (`None` when absent or unreadable).
pub fn reason_of(record: &DocRecord) -> Option<FailReason> {
    serde_json::from_str(record.reason_json.as_deref()?).ok()
}

/// A job's statistics, as its record stores them.
pub(crate) fn summary_json(summary: &SyncSummary) -> String {
    serde_json::to_string(summary).expect("a summary serializes")
}

/// A job's statistics, read back from its record (`None` when unreadable).
pub fn summary_of(record: &JobRecord) -> Option<SyncSummary> {
    serde_json::from_str(&record.summary_json).ok()
}
