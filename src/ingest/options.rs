//! Knowledge-base bundles: `bounded-rag ingest DIR --out PATH` writes one, every loader opens
//! one, `bounded-rag kb publish` ships one to S3.
//!
//! A bundle is a folder:
//! - `kb-manifest.json`: [`Manifest`] (format version, content hash, counts, build time, the
//!   embedding model and dimensions or none, and every file with its size and SHA-256);
//! - `index/`: the tantivy BM25 index, one segment, documents in corpus order;
//! - `vectors.bin`: with embeddings, one int8 vector per passage in index order.
//!
//! Writing is all-or-nothing for readers: the bundle is built in a staging folder beside the
//! target (`.NAME.partial/`) and renamed into place only when complete, manifest last. The
//! staging folder also keeps the vectors embedded so far, so an interrupted ingest resumes
//! without embedding them again.

mod embedding;
mod hash;
mod manifest;
mod open;
mod plan;
mod write;

pub use super::layout::MANIFEST;
pub(crate) use hash::content_hash;
pub(crate) use manifest::hex_digest;
pub use manifest::{BundleFile, EmbeddingInfo, Manifest, FORMAT_VERSION};
pub(crate) use open::{open_dir, open_in_memory, Opened};

use super::sources::SkippedFile;
use super::stats::KbStats;
use super::{Embedder, RetrievalError};
use crate::engine::RetryPolicy;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Reports the progress of an ingest (the CLI draws a bar on a terminal).
pub trait Progress: Send + Sync {
    /// A stage starts (`embedding`, `indexing`) with `total` units of work.
    fn stage(&self, _name: &'static str, _total: u64) {}
    /// `n` more units of the current stage are done.
    fn advance(&self, _n: u64) {}
    /// `n` units of the current stage were done by an earlier, interrupted run: done, but not
    /// part of this run's rate.
    fn resumed(&self, n: u64) {
        self.advance(n);
    }
    /// The current stage is over.
    fn finish(&self) {}
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {}

/// How an ingest embeds passages.
pub struct IngestOptions<'a> {
    /// Embeds every passage when set; BM25 only when `None`.
    pub embedder: Option<&'a dyn Embedder>,
    /// Passages per embeddings call.
    pub batch_size: usize,
    /// Retries of a batch after a transient failure (then the ingest stops, resumable).
    pub retry: RetryPolicy,
    /// Timeout of one embeddings call.
    pub call_timeout: Duration,
    /// Batches in flight at once (at least 1).
    pub concurrency: usize,
    /// Put before every passage embedded; recorded in the manifest.
    pub passage_prefix: String,
    /// Put before every query at search time; recorded in the manifest.
    pub query_prefix: String,
    /// Where progress goes.
    pub progress: &'a dyn Progress,
    /// Refuse to write the bundle when any file is skipped (`ingest --strict`).
    pub strict: bool,
}

impl Default for IngestOptions<'_> {
    fn default() -> Self {
        Self {
            embedder: None,
            batch_size: 64,
            retry: RetryPolicy {
                max_retries: 4,
                base_delay: Duration::from_millis(500),
                max_delay: Duration::from_secs(10),
            },
            call_timeout: Duration::from_secs(60),
            concurrency: 1,
            passage_prefix: String::new(),
            query_prefix: String::new(),
            progress: &NoProgress,
            strict: false,
        }
    }
}

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

/// Ingests `source` into a bundle at `target` without vectors (BM25 only).
pub fn ingest_dir(source: &Path, target: &Path) -> Result<IngestSummary, RetrievalError> {
    super::sources::enable_parsers();
    let plan = plan::Plan::new(source, target, false)?;
    plan.finish(None, &NoProgress, (0, 0))
}

/// Ingests `source` (walked recursively) into a bundle at `target`, embedding every passage
/// when `options.embedder` is set.
///
/// `target` must be missing, empty, or a previous bundle (which is replaced). Nothing is
/// written to `target` unless every source file is valid and every passage is embedded; an
/// ingest stopped by an embeddings failure resumes where it stopped when run again.
pub async fn ingest(
    source: &Path,
    target: &Path,
    options: &IngestOptions<'_>,
) -> Result<IngestSummary, RetrievalError> {
    super::sources::enable_parsers();
    let plan = plan::Plan::new(source, target, options.strict)?;
    let Some(embedder) = options.embedder else {
        return plan.finish(None, options.progress, (0, 0));
    };
    let embedded = embedding::embed_passages(&plan, embedder, options).await?;
    let counts = (embedded.embedded, embedded.calls);
    plan.finish(Some(embedded), options.progress, counts)
}
