//! The debounced, single-flight publish. A document change schedules one delayed publish
//! message (only if none is scheduled: a burst shares it). The publish takes the lease on the
//! control item (a conditional write: two publishes never overlap; a crashed one's lease
//! lapses and its redelivered message takes over), builds the state from the document
//! records (reader output from S3, vectors from the cache the document steps filled), and
//! publishes it through the same build as `kb sync`. Changes recorded while it ran schedule
//! the next one.
use super::error::JobError;
use super::ledger::{reason_of, summary_json};
use super::message::SyncMessage;
use super::{now_ms, SyncJob};
use crate::ingest::sync::build::build_and_publish;
use crate::ingest::sync::state::{DocState, DocStatus, SyncState};
use crate::ingest::sync::summary::{FailedFile, SyncSummary};
use crate::store::{DocPhase, JobRecord, PublishEnd, SyncControl};
use futures::StreamExt;
use std::collections::{HashMap, HashSet};

/// Reader outputs fetched at once by a publish.
const FETCH_CONCURRENCY: usize = 16;

/// What a publish message did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PublishOutcome {
    /// A new version readers now load.
    Published(String),
    /// The recorded changes left the documents as published: no publish.
    NothingChanged,
    /// Another publish holds the lease: this one is sent again after the debounce.
    Busy,
}

impl SyncJob<'_> {
    /// Runs one publish, single-flight.
    pub(crate) async fn handle_publish(&self) -> Result<PublishOutcome, JobError> {
        let owner = uuid::Uuid::new_v4().to_string();
        let started = now_ms();
        let until = started + self.settings.lease.as_millis() as u64;
        let Some(taken) = self
            .ledger
            .take_publish_lease(&owner, started, until)
            .await?
        else {
            // Keep the trigger alive: the running publish may have started before the
            // changes this message was for.
            self.queue
                .send(SyncMessage::publish_body(), self.settings.debounce)
                .await?;
            return Ok(PublishOutcome::Busy);
        };
        // On failure the lease lapses by itself; the message comes back and retries.
        let outcome = self.publish_taken(&owner, &taken, started).await?;
        // Changes recorded while this publish ran get their own.
        if self.ledger.control().await?.changes > taken.changes {
            self.schedule_publish().await?;
        }
        Ok(outcome)
    }

    async fn publish_taken(
        &self,
        owner: &str,
        taken: &SyncControl,
        started: u64,
    ) -> Result<PublishOutcome, JobError> {
        let old = self.objects.load_state().await?;
        let docs = self.ledger.docs().await?;
        // The reader output of every document read since the last version, fetched at once.
        let wanted: HashSet<&str> = docs
            .iter()
            .filter(|d| d.phase == DocPhase::Done)
            .filter(|d| old.documents.get(&d.rel).is_none_or(|p| p.hash != d.hash))
            .map(|d| d.hash.as_str())
            .collect();
        let mut stored = HashMap::new();
        let mut fetches = futures::stream::iter(wanted)
            .map(|hash| async move { (hash, self.stored_status(hash).await) })
            .buffer_unordered(FETCH_CONCURRENCY);
        while let Some((hash, status)) = fetches.next().await {
            stored.insert(hash.to_owned(), status?);
        }
        drop(fetches);
        let mut next = SyncState {
            version: old.version.clone(),
            ..SyncState::default()
        };
        for doc in docs {
            let entry = match doc.phase {
                DocPhase::Deleted => continue,
                // Being processed: the last published content stays until it is recorded.
                DocPhase::Processing => match old.documents.get(&doc.rel) {
                    Some(prev) => prev.clone(),
                    None => continue,
                },
                DocPhase::Failed => {
                    let reason = reason_of(&doc)
                        .unwrap_or(crate::ingest::sync::FailReason::Abandoned { attempts: 0 });
                    DocState {
                        fingerprint: doc.object_version,
                        hash: doc.hash,
                        status: DocStatus::Failed { reason },
                    }
                }
                DocPhase::Done => {
                    let status = match old.documents.get(&doc.rel) {
                        Some(prev) if prev.hash == doc.hash => prev.status.clone(),
                        _ => stored[&doc.hash].clone(),
                    };
                    DocState {
                        fingerprint: doc.object_version,
                        hash: doc.hash,
                        status,
                    }
                }
            };
            next.documents.insert(doc.rel, entry);
        }
        let mut summary = SyncSummary {
            scanned: next.documents.len(),
            ..SyncSummary::default()
        };
        let mut changed = HashSet::new();
        for (rel, doc) in &next.documents {
            match old.documents.get(rel) {
                None => summary.new += 1,
                Some(prev) if prev.hash == doc.hash && prev.status == doc.status => {
                    summary.unchanged += 1;
                    continue;
                }
                Some(_) => summary.modified += 1,
            }
            changed.insert(rel.clone());
        }
        summary.deleted = old
            .documents
            .keys()
            .filter(|rel| !next.documents.contains_key(*rel))
            .count();
        for (rel, doc) in &next.documents {
            match &doc.status {
                DocStatus::Failed { reason } => summary.failed.push(FailedFile {
                    path: rel.clone(),
                    reason: reason.clone(),
                }),
                DocStatus::Skipped { reason } => {
                    summary.skipped.push(crate::knowledge::SkippedFile {
                        path: rel.clone(),
                        reason: reason.clone(),
                    })
                }
                DocStatus::Read { .. } => {}
            }
        }
        summary.embedded_passages = (taken.embedded - taken.published_embedded) as usize;
        summary.cached_passages = (taken.cached - taken.published_cached) as usize;
        if changed.is_empty() && summary.deleted == 0 && old.version.is_some() {
            let end = PublishEnd {
                taken,
                version: old.version.as_deref(),
                published: false,
            };
            self.ledger.finish_publish(owner, end).await?;
            return Ok(PublishOutcome::NothingChanged);
        }
        let root = self.source.root();
        let built =
            build_and_publish(&next, &root, &[], &self.objects, &self.options, &changed).await?;
        next.version = Some(built.version.clone());
        self.objects.save_state(&next).await?;
        summary.version = Some(built.version.clone());
        summary.published = built.published;
        let job = JobRecord {
            number: taken.changes,
            started_at: started,
            finished_at: now_ms(),
            summary_json: summary_json(&summary),
        };
        self.ledger.put_job(&job).await?;
        let end = PublishEnd {
            taken,
            version: Some(&built.version),
            published: built.published,
        };
        self.ledger.finish_publish(owner, end).await?;
        if let Some(events) = self.events {
            let detail = serde_json::json!({
                "destination": self.objects.store.location().to_string(),
                "source": self.source_location.to_string(),
                "job": job.number,
                "statistics": summary,
            });
            if let Err(e) = events.put(&detail).await {
                // The version is published and recorded; a lost event is logged, not retried.
                tracing::warn!(error = %e, "Sync Finished event not sent");
            }
        }
        Ok(PublishOutcome::Published(built.version))
    }

    /// The reader output a document step stored under `hash`.
    async fn stored_status(&self, hash: &str) -> Result<DocStatus, JobError> {
        let name = format!("docs/{hash}.json");
        let bytes = self
            .objects
            .get(&name)
            .await?
            .ok_or_else(|| JobError::Transient(format!("{name} is not stored (yet)")))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| JobError::Permanent(format!("{name} is not a document status: {e}")))
    }
}
