//! `ingest DIR --out postgres://...` (or `rds-data://...`): the same sources, passages and
//! vectors as a bundle, written into PostgreSQL instead, a document per transaction; documents
//! no longer in the folder are deleted at the end, so the database mirrors the folder.
use super::describe;
use super::embedding::embed_passages;
use super::options::IngestOptions;
use super::plan::{canonical, Plan};
use super::sources::enable_parsers;
use crate::ingest::IngestError;
use crate::kb::Mirror;
use crate::knowledge::{EmbeddingInfo, KbStats, SkippedFile};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What an ingest into a database wrote.
#[derive(Debug, Clone, Serialize)]
pub struct StoreIngestSummary {
    /// The source folder.
    pub source: PathBuf,
    /// The database (no password).
    pub store: String,
    /// Counts of what was written.
    pub stats: KbStats,
    /// Documents written (each in one transaction).
    pub documents_written: usize,
    /// Rows deleted because their document left the folder.
    pub rows_deleted: i64,
    /// Files not ingested, with the reason.
    pub skipped: Vec<SkippedFile>,
    /// The vectors' model, if embedded.
    pub embedding: Option<EmbeddingInfo>,
    /// Passages embedded by this run.
    pub embedded: usize,
    /// Embeddings calls made by this run.
    pub embedding_calls: usize,
}

impl std::fmt::Display for StoreIngestSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ingested {} into {}: {}; {} documents written, {} rows of removed documents deleted",
            self.source.display(),
            self.store,
            self.stats,
            self.documents_written,
            self.rows_deleted
        )?;
        for skip in &self.skipped {
            write!(f, "\n  skipped {skip}")?;
        }
        match &self.embedding {
            Some(e) => write!(
                f,
                "\nvectors: {} ({} dimensions), {} passages embedded in {} calls",
                e.model, e.dimensions, self.embedded, self.embedding_calls
            ),
            None => write!(f, "\nvectors: none (full text only)"),
        }
    }
}

/// Ingests `source` into the database of `store`, creating its tables when missing.
pub(crate) async fn ingest_into_store(
    source: &Path,
    store: &dyn Mirror,
    options: &IngestOptions<'_>,
) -> Result<StoreIngestSummary, IngestError> {
    enable_parsers();
    let staging = store.staging_for(source);
    let source = canonical(source)?;
    let plan = Plan::read(source, staging, options.strict)?;
    let embedded = match options.embedder {
        Some(embedder) => Some(embed_passages(&plan, embedder, options).await?),
        None => None,
    };
    let info = embedded.as_ref().map(|e| e.info.clone());
    store
        .prepare(info.as_ref(), options.tenant_key.as_deref())
        .await?;

    let corpus = &plan.corpus;
    let vectors = embedded.as_ref().map(|e| &e.vectors);
    // Passages come first in a corpus, in the order of their vectors.
    let groups = corpus.groups(|_| true);
    let description = describe::given_or_derived(options.description.as_deref(), &corpus.docs);
    let rows_deleted = store
        .write(
            corpus,
            &groups,
            &|i| vectors.and_then(|v| v.get(i)).map(Vec::as_slice),
            options.progress,
            options.tenant_index_rows,
            description.as_deref(),
        )
        .await?;
    Ok(StoreIngestSummary {
        source: plan.source.clone(),
        store: store.name().to_owned(),
        stats: corpus.stats,
        documents_written: groups.len(),
        rows_deleted,
        skipped: corpus.skipped.clone(),
        embedding: info,
        embedded: embedded.as_ref().map_or(0, |e| e.embedded),
        embedding_calls: embedded.as_ref().map_or(0, |e| e.calls),
    })
}
