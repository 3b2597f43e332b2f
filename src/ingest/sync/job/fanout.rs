//! A full sync (the first one of a large bucket, or one asked for): the source listed once,
//! every object whose recorded write differs queued as its own message, every recorded
//! document no longer listed queued as a removal. The queue then spreads the documents over
//! as many invocations as the function's reserved concurrency allows.
use super::error::JobError;
use super::message::{ChangeKind, ObjectChange, SyncMessage};
use super::SyncJob;
use crate::store::DocPhase;
use std::collections::HashMap;

impl SyncJob<'_> {
    /// Lists the source and queues its changes; returns how many messages were sent.
    pub(crate) async fn handle_full_sync(&self) -> Result<usize, JobError> {
        let listed = self.source.list().await?;
        let recorded: HashMap<String, crate::store::DocRecord> = self
            .ledger
            .docs()
            .await?
            .into_iter()
            .map(|d| (d.rel.clone(), d))
            .collect();
        let mut bodies = Vec::new();
        for item in &listed {
            let version = item.fingerprint.trim_start_matches("etag:").to_owned();
            let current = recorded.get(&item.rel);
            if current.is_some_and(|d| d.object_version == version && d.phase != DocPhase::Deleted)
            {
                continue;
            }
            bodies.push(SyncMessage::document_body(ObjectChange {
                key: self.source_location.key(&item.rel),
                kind: ChangeKind::Created,
                version,
                sequencer: String::new(),
            }));
        }
        let present: std::collections::HashSet<&str> =
            listed.iter().map(|l| l.rel.as_str()).collect();
        for doc in recorded.values() {
            if doc.phase != DocPhase::Deleted && !present.contains(doc.rel.as_str()) {
                bodies.push(SyncMessage::document_body(ObjectChange {
                    key: self.source_location.key(&doc.rel),
                    kind: ChangeKind::Removed,
                    version: format!("removed:{}", doc.object_version),
                    sequencer: String::new(),
                }));
            }
        }
        let sent = bodies.len();
        self.queue.send_all(bodies).await?;
        Ok(sent)
    }
}
