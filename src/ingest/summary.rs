//! What an ingest wrote: counts, skipped files, the manifest, the embeddings calls; printed by
//! the CLI and serialized by `ingest --json`.
use crate::kb::Manifest;
use crate::knowledge::KbStats;
use crate::knowledge::SkippedFile;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What an ingest wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IngestSummary {
    /// Counts of what was indexed.
    pub stats: KbStats,
    /// How many files under the source were not ingested (`skipped.len()`).
    pub skipped_files: usize,
    /// Each file not ingested, with the reason (also in the manifest).
    pub skipped: Vec<SkippedFile>,
    /// The source folder (absolute when it could be resolved).
    pub source: PathBuf,
    /// The bundle folder.
    pub target: PathBuf,
    /// The bundle's manifest.
    pub manifest: Manifest,
    /// Passages embedded by this run (the others came from an interrupted run's staging).
    pub embedded: usize,
    /// Embeddings calls made by this run.
    pub embedding_calls: usize,
}

impl std::fmt::Display for IngestSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ingested {} into {}: {}",
            self.source.display(),
            self.target.display(),
            self.stats
        )?;
        if !self.skipped.is_empty() {
            write!(f, "; {} files skipped:", self.skipped.len())?;
            for skip in &self.skipped {
                write!(f, "\n  skipped {skip}")?;
            }
        }
        match &self.manifest.embedding {
            Some(e) => write!(
                f,
                "\nvectors: {} ({} dimensions), {} passages embedded in {} calls",
                e.model, e.dimensions, self.embedded, self.embedding_calls
            )?,
            None => write!(f, "\nvectors: none (BM25 only)")?,
        }
        write!(f, "\nversion {}", self.manifest.content_hash)
    }
}
