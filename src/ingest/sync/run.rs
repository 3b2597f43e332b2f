//! `kb sync`: a source compared with the last synced state of a destination, only the changed
//! files read, one version published (or none when nothing changed), and the new state
//! stored after the publish. A sync stopped anywhere is simply run again: the state still
//! names the last published documents, and every vector already embedded is in the cache.
use super::build::build_and_publish;
use super::objects::SyncObjects;
use super::reader::read_bounded;
use super::source::{Listed, SyncSource};
use super::state::{DocState, DocStatus, SyncState};
use super::summary::{FailedFile, SyncSummary};
use crate::ingest::options::IngestOptions;
use crate::ingest::sources::{enable_parsers, reading_format, unread_skip, ReadLimits};
use crate::ingest::IngestError;
use crate::kb::BundleStore;
use crate::knowledge::hex;
use crate::knowledge::{Format, SkippedFile};
use futures::StreamExt;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::path::Path;

/// Files fetched and read at once.
const READ_CONCURRENCY: usize = 8;

/// What a comparison of a source with the last synced state found.
pub(crate) struct Compared {
    /// The state to store once the changes are written.
    pub next: SyncState,
    /// Relative paths of the documents added or modified (and read again).
    pub changed: HashSet<String>,
    /// Files of no format ingest reads.
    pub unknown: Vec<SkippedFile>,
    /// The counts so far.
    pub summary: SyncSummary,
}

impl Compared {
    /// Whether nothing was added, modified or deleted since a state that has been written.
    pub(crate) fn nothing_new(&self, old: &SyncState) -> bool {
        self.summary.new + self.summary.modified + self.summary.deleted == 0
            && old.version.is_some()
    }
}

/// Syncs `source` to the knowledge base published at `dest`, embedding with
/// `options.embedder` when set (BM25 only otherwise).
pub async fn sync(
    source: &SyncSource,
    dest: &BundleStore,
    options: &IngestOptions<'_>,
) -> Result<SyncSummary, IngestError> {
    enable_parsers();
    let objects = SyncObjects::new(dest.clone());
    let old = objects.load_state().await?;
    let Compared {
        mut next,
        changed,
        unknown,
        mut summary,
    } = match compare(source, &old).await? {
        c if c.nothing_new(&old) => {
            if c.next != old {
                // Only fingerprints moved (a file touched): remember them, publish nothing.
                objects.save_state(&c.next).await?;
            }
            let mut summary = c.summary;
            summary.version = old.version;
            return Ok(summary);
        }
        c => c,
    };
    let built =
        build_and_publish(&next, &source.root(), &unknown, &objects, options, &changed).await?;
    summary.published = built.published;
    summary.embedded_passages = built.embedded;
    summary.cached_passages = built.cached;
    next.version = Some(built.version.clone());
    summary.version = Some(built.version);
    objects.save_state(&next).await?;
    Ok(summary)
}

/// Lists `source`, compares it with `old` and reads the files whose fingerprint moved.
pub(crate) async fn compare(source: &SyncSource, old: &SyncState) -> Result<Compared, IngestError> {
    let limits = ReadLimits::from_env()?;
    let listed_at = super::source::now_ns();
    let listed = source.list().await?;
    let mut summary = SyncSummary {
        scanned: listed.len(),
        ..SyncSummary::default()
    };
    let mut next = SyncState {
        version: old.version.clone(),
        listed_at,
        ..SyncState::default()
    };
    let mut unknown = Vec::new();
    let mut to_read = Vec::new();
    for item in listed {
        let format = match reading_format(Path::new(&item.rel)) {
            Ok(format) => format,
            Err(reason) => {
                unknown.push(SkippedFile {
                    path: item.rel,
                    reason,
                });
                continue;
            }
        };
        match old.documents.get(&item.rel) {
            Some(doc) if doc.fingerprint == item.fingerprint && !item.racy(old.listed_at) => {
                summary.unchanged += 1;
                next.documents.insert(item.rel, doc.clone());
            }
            previous => to_read.push((item, format, previous)),
        }
    }
    let reads: Vec<(String, DocState)> = futures::stream::iter(to_read)
        .map(|(item, format, previous)| read_one(source, item, format, previous, limits))
        .buffer_unordered(READ_CONCURRENCY)
        .collect()
        .await;
    let mut changed = HashSet::new();
    for (rel, doc) in reads {
        match old.documents.get(&rel) {
            None => summary.new += 1,
            Some(prev) if prev.hash == doc.hash && prev.status == doc.status => {
                summary.unchanged += 1;
                next.documents.insert(rel, doc);
                continue;
            }
            Some(_) => summary.modified += 1,
        }
        changed.insert(rel.clone());
        next.documents.insert(rel, doc);
    }
    summary.deleted = old
        .documents
        .keys()
        .filter(|rel| !next.documents.contains_key(*rel))
        .count();
    report_files(&next, unknown.clone(), &mut summary);
    Ok(Compared {
        next,
        changed,
        unknown,
        summary,
    })
}

/// The failed and skipped files of `state` (and the `unknown` ones) into `summary`.
fn report_files(state: &SyncState, unknown: Vec<SkippedFile>, summary: &mut SyncSummary) {
    summary.skipped = unknown;
    for (rel, doc) in &state.documents {
        match &doc.status {
            DocStatus::Failed { reason } => summary.failed.push(FailedFile {
                path: rel.clone(),
                reason: reason.clone(),
            }),
            DocStatus::Skipped { reason } => summary.skipped.push(SkippedFile {
                path: rel.clone(),
                reason: reason.clone(),
            }),
            DocStatus::Read { .. } => {}
        }
    }
    summary.skipped.sort_by(|a, b| a.path.cmp(&b.path));
}

/// Fetches and reads one changed file; bytes identical to the last sync's are not read again.
async fn read_one(
    source: &SyncSource,
    item: Listed,
    format: Option<Format>,
    previous: Option<&DocState>,
    limits: ReadLimits,
) -> (String, DocState) {
    let Listed {
        rel,
        fingerprint,
        size,
        ..
    } = item;
    // A file never read has no hash.
    let unread = |rel, status| {
        let hash = String::new();
        (
            rel,
            DocState {
                fingerprint: fingerprint.clone(),
                hash,
                status,
            },
        )
    };
    if let Some(reason) = unread_skip(format, size, &limits) {
        return unread(rel, DocStatus::Skipped { reason });
    }
    let bytes = match source.fetch(&rel).await {
        Ok(bytes) => bytes,
        Err(reason) => return unread(rel, DocStatus::Failed { reason }),
    };
    let hash = hex(&Sha256::digest(&bytes));
    if let Some(prev) = previous.filter(|p| p.hash == hash) {
        let status = prev.status.clone();
        return (
            rel,
            DocState {
                fingerprint,
                hash,
                status,
            },
        );
    }
    let path = source.path_of(&rel);
    let name = rel.clone();
    let status =
        tokio::task::spawn_blocking(move || read_bounded(path, name, format, bytes, limits))
            .await
            .unwrap_or_else(|e| DocStatus::Failed {
                reason: super::state::FailReason::Panicked {
                    message: e.to_string(),
                },
            });
    (
        rel,
        DocState {
            fingerprint,
            hash,
            status,
        },
    )
}
