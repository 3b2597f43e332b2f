//! What a sync did: the job statistics (`kb sync --json` prints this object; the sync
//! function records it per job).
use super::state::FailReason;
use crate::knowledge::SkippedFile;
use serde::{Deserialize, Serialize};

/// One file that failed, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedFile {
    /// Relative, `/`-separated path under the source.
    pub path: String,
    /// Why.
    pub reason: FailReason,
}

/// The statistics of one sync.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SyncSummary {
    /// Files listed under the source (every file that counts, read or not).
    pub scanned: usize,
    /// Files not in the last sync.
    pub new: usize,
    /// Files whose bytes changed since the last sync.
    pub modified: usize,
    /// Files of the last sync that are gone.
    pub deleted: usize,
    /// Files not read because they did not change.
    pub unchanged: usize,
    /// Files whose reader failed, with the reason (left out of the version).
    pub failed: Vec<FailedFile>,
    /// Files not ingested for one of ingest's reasons (unknown format, empty, too large...).
    pub skipped: Vec<SkippedFile>,
    /// Passage texts sent to the embedder.
    pub embedded_passages: usize,
    /// Passages of new or modified files whose vectors came from the embedding cache.
    pub cached_passages: usize,
    /// The version readers load after the sync (`None` when nothing was ever published).
    pub version: Option<String>,
    /// Whether this sync published a new version (nothing changed: no publish).
    pub published: bool,
}

impl std::fmt::Display for SyncSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "scanned {}: {} new, {} modified, {} deleted, {} unchanged, {} failed, {} skipped; \
             {} passages embedded, {} from the cache",
            self.scanned,
            self.new,
            self.modified,
            self.deleted,
            self.unchanged,
            self.failed.len(),
            self.skipped.len(),
            self.embedded_passages,
            self.cached_passages
        )?;
        for fail in &self.failed {
            write!(f, "\n  failed {}: {}", fail.path, fail.reason)?;
        }
        for skip in &self.skipped {
            write!(f, "\n  skipped {skip}")?;
        }
        match (&self.version, self.published) {
            (Some(v), true) => write!(f, "\npublished version {v}"),
            (Some(v), false) => write!(f, "\nnothing changed; readers keep version {v}"),
            (None, _) => write!(f, "\nnothing published"),
        }
    }
}
