//! One changed object, processed once: the record read, the change classified (a duplicate,
//! a stale event, another invocation's work in flight), the document claimed with a lease
//! (a crashed invocation's claim is taken over once it lapses), fetched, read under the guard,
//! its passages embedded through the cache, its reader output stored, the record written
//! and a publish scheduled. A write delivered `max_attempts` times without finishing is
//! marked failed ([`FailReason::Abandoned`]) and stops coming back.
use super::error::JobError;
use super::ledger::reason_json;
use super::message::{later, ChangeKind, ObjectChange};
use super::{now_ms, SyncJob};
use crate::ingest::embedding::{text_of, Key};
use crate::ingest::sources::{self, reading_format, unread_skip, ReadLimits, SourceFile};
use crate::ingest::sync::build::embed_missing;
use crate::ingest::sync::embedding_cache::EmbeddingCache;
use crate::ingest::sync::reader::read_bounded;
use crate::ingest::sync::state::{DocStatus, FailReason};
use crate::knowledge::hex;
use crate::store::{DocPhase, DocRecord};
use sha2::{Digest, Sha256};
use std::path::Path;

/// What became of one change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DocOutcome {
    /// Recorded in this phase (a publish is scheduled).
    Recorded(DocPhase),
    /// This write was recorded already (a duplicate event or a redelivery): nothing done.
    Duplicate,
    /// A later write of the key is recorded already: nothing done.
    Stale,
    /// Another invocation is processing this write (its lease is live): deliver again later.
    InFlight,
    /// Not a file the sync reads (outside the prefix, hidden, a folder marker).
    Ignored,
}

impl SyncJob<'_> {
    /// Processes one change.
    pub(crate) async fn handle_change(
        &self,
        change: &ObjectChange,
    ) -> Result<DocOutcome, JobError> {
        let Some(rel) = self.rel_of(&change.key) else {
            return Ok(DocOutcome::Ignored);
        };
        let now = now_ms();
        let current = self.ledger.doc(&rel).await?;
        let removed = change.kind == ChangeKind::Removed;
        let mut attempts = 1;
        if let Some(cur) = &current {
            if later(&cur.sequencer, &change.sequencer) {
                return Ok(DocOutcome::Stale);
            }
            let same =
                cur.object_version == change.version && (cur.phase == DocPhase::Deleted) == removed;
            if same {
                match cur.phase {
                    DocPhase::Done | DocPhase::Failed | DocPhase::Deleted => {
                        return Ok(DocOutcome::Duplicate)
                    }
                    DocPhase::Processing if cur.lease_until > now => {
                        return Ok(DocOutcome::InFlight)
                    }
                    // A crashed (or timed-out) invocation's claim: taken over.
                    DocPhase::Processing => attempts = cur.attempts + 1,
                }
            }
        }
        let expected = current.as_ref().map(|c| c.rev);
        let mut record = DocRecord {
            rel: rel.clone(),
            object_version: change.version.clone(),
            sequencer: change.sequencer.clone(),
            phase: DocPhase::Deleted,
            hash: String::new(),
            reason_json: None,
            attempts,
            lease_until: 0,
            rev: expected.unwrap_or(0),
        };
        if removed || attempts > self.settings.max_attempts {
            if !removed {
                record.phase = DocPhase::Failed;
                record.reason_json = Some(reason_json(&FailReason::Abandoned {
                    attempts: attempts - 1,
                }));
            }
            return self.record(&record, expected, 0, 0).await;
        }
        record.phase = DocPhase::Processing;
        record.lease_until = now + self.settings.lease.as_millis() as u64;
        if !self.ledger.put_doc(&record, expected).await? {
            return Err(JobError::Transient(format!(
                "{rel}: recorded by another invocation meanwhile"
            )));
        }
        let claimed = record.rev + 1;
        let (status, hash, embedded, cached) = self.process(&rel, &change.key).await?;
        record.rev = claimed;
        record.lease_until = 0;
        record.hash = hash;
        match status {
            DocStatus::Failed { reason } => {
                record.phase = DocPhase::Failed;
                record.reason_json = Some(reason_json(&reason));
            }
            status => {
                record.phase = DocPhase::Done;
                let json = serde_json::to_vec(&status).expect("status serializes");
                self.objects
                    .put(&format!("docs/{}.json", record.hash), json)
                    .await?;
            }
        }
        self.record(&record, Some(claimed), embedded, cached).await
    }

    /// Writes `record` if nobody else did meanwhile, counts the change, schedules a publish.
    async fn record(
        &self,
        record: &DocRecord,
        expected: Option<u64>,
        embedded: u64,
        cached: u64,
    ) -> Result<DocOutcome, JobError> {
        if !self.ledger.put_doc(record, expected).await? {
            // Taken over after our lease lapsed: the other invocation records it.
            return Ok(DocOutcome::Duplicate);
        }
        self.ledger.count_change(embedded, cached).await?;
        self.schedule_publish().await?;
        Ok(DocOutcome::Recorded(record.phase))
    }

    /// Fetches, reads and embeds `rel`: its status, bytes hash, passages embedded and cached.
    async fn process(
        &self,
        rel: &str,
        key: &str,
    ) -> Result<(DocStatus, String, u64, u64), JobError> {
        let limits = ReadLimits::from_env()?;
        let format = match reading_format(Path::new(rel)) {
            Ok(format) => format,
            Err(reason) => return Ok(unread(DocStatus::Skipped { reason })),
        };
        let crate::ingest::sync::SyncSource::S3 { client, location } = &self.source else {
            unreachable!("the sync function reads S3");
        };
        let got = client
            .get_object()
            .bucket(&location.bucket)
            .key(key)
            .send()
            .await;
        let object = match got {
            Ok(object) => object,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => {
                // Gone since the event: its removal event follows.
                let reason = FailReason::Unfetchable {
                    detail: "no such key".into(),
                };
                return Ok((DocStatus::Failed { reason }, String::new(), 0, 0));
            }
            Err(e) => return Err(JobError::sdk("GetObject", e)),
        };
        let size = object.content_length().unwrap_or(0).max(0) as u64;
        if let Some(reason) = unread_skip(format, size, &limits) {
            return Ok(unread(DocStatus::Skipped { reason }));
        }
        let bytes = object
            .body
            .collect()
            .await
            .map_err(|e| JobError::Transient(format!("reading {key}: {e}")))?
            .into_bytes()
            .to_vec();
        let hash = hex(&Sha256::digest(&bytes));
        let path = self.source.path_of(rel);
        let name = rel.to_owned();
        let status =
            tokio::task::spawn_blocking(move || read_bounded(path, name, format, bytes, limits))
                .await
                .unwrap_or_else(|e| DocStatus::Failed {
                    reason: FailReason::Panicked {
                        message: e.to_string(),
                    },
                });
        let (embedded, cached) = self.embed(rel, &status).await?;
        Ok((status, hash, embedded, cached))
    }

    /// Embeds the passages of one read document through the cache (the publish then finds
    /// them all there): passages embedded, passages found cached.
    async fn embed(&self, rel: &str, status: &DocStatus) -> Result<(u64, u64), JobError> {
        let (
            Some(embedder),
            DocStatus::Read {
                format,
                text,
                pages,
            },
        ) = (self.options.embedder, status)
        else {
            return Ok((0, 0));
        };
        let file = SourceFile {
            path: self.source.path_of(rel),
            rel: rel.to_owned(),
            format: *format,
            text: text.clone(),
            pages: pages.clone(),
        };
        // The document alone chunks as it does in the whole corpus (passages never span files).
        let Ok(corpus) = sources::build(&self.source.root(), &[file], Vec::new()) else {
            return Ok((0, 0)); // no passages (empty, or a graph file)
        };
        let prefix = &self.options.passage_prefix;
        let cache = EmbeddingCache::new(&self.objects, embedder, prefix);
        let texts: Vec<(Key, String, ())> = corpus
            .docs
            .iter()
            .filter(|d| d.kind == crate::knowledge::DocKind::Episode)
            .map(|d| {
                let text = text_of(prefix, &d.title, &d.content);
                (cache.key(&text), text, ())
            })
            .collect();
        let mut keys: Vec<Key> = texts.iter().map(|t| t.0).collect();
        keys.sort_unstable();
        keys.dedup();
        let have = cache.get_many(&keys).await?;
        let (fresh, _) = embed_missing(&cache, embedder, &self.options, &texts, &have).await?;
        let embedded = fresh.len() as u64;
        Ok((embedded, texts.len() as u64 - embedded))
    }
}

/// A file skipped unread: its "hash" names its status (the stored reader output is the status).
fn unread(status: DocStatus) -> (DocStatus, String, u64, u64) {
    let json = serde_json::to_vec(&status).expect("status serializes");
    (status, hex(&Sha256::digest(&json)), 0, 0)
}
