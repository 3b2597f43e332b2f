//! `ingest DIR --out postgres://...` (or `rds-data://...`): the same sources, passages and
//! vectors as a bundle, written into PostgreSQL instead, a document per transaction; documents
//! no longer in the folder are deleted at the end, so the database mirrors the folder.
use super::bundle::embedding::embed_passages;
use super::bundle::plan::Plan;
use super::describe;
use super::options::IngestOptions;
use super::sources::enable_parsers;
use crate::search::format::{EmbeddingInfo, KbStats, SkippedFile};
use crate::search::postgres::{schema, schema_error, write, Sql};
use crate::search::{DocKind, RetrievalError};
use serde::Serialize;
use sha2::{Digest, Sha256};
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

/// Ingests `source` into the database `sql`, creating its tables when missing.
pub(crate) async fn ingest_into_store(
    source: &Path,
    sql: &dyn Sql,
    options: &IngestOptions<'_>,
) -> Result<StoreIngestSummary, RetrievalError> {
    enable_parsers();
    let staging = std::env::temp_dir().join(format!(
        "bounded-rag-ingest-{}",
        &crate::search::format::hex(&Sha256::digest(
            format!("{}\n{}", source.display(), sql.name()).as_bytes()
        ))[..16]
    ));
    let plan = Plan::for_store(source, staging, options.strict)?;
    let embedded = match options.embedder {
        Some(embedder) => Some(embed_passages(&plan, embedder, options).await?),
        None => None,
    };
    let info = embedded.as_ref().map(|e| e.info.clone());
    let fail = |e| schema_error(sql.name(), e);
    schema::ensure(sql, info.as_ref()).await.map_err(fail)?;
    let store_error = |e: crate::search::postgres::SqlError| {
        schema_error(sql.name(), schema::SchemaError::Sql(e))
    };

    let corpus = &plan.corpus;
    let vectors = embedded.as_ref().map(|e| &e.vectors);
    let mut at = 0; // corpus position
    let mut passage = 0; // passage number (vectors are per passage)
    let mut names: Vec<&str> = Vec::new();
    options
        .progress
        .stage("writing", corpus.documents.len() as u64 + 1);
    for info in &corpus.documents {
        let items: Vec<write::Item<'_>> = (at..at + info.passages)
            .map(|i| {
                let item = write::Item {
                    doc: &corpus.docs[i],
                    meta: corpus.meta.get(i as u32),
                    vector: vectors
                        .and_then(|v| v.get(passage + i - at))
                        .map(Vec::as_slice),
                };
                item
            })
            .collect();
        write::write_document(sql, &info.path, &items)
            .await
            .map_err(store_error)?;
        names.push(&info.path);
        at += info.passages;
        passage += info.passages;
        options.progress.advance(1);
    }
    let graph: Vec<write::Item<'_>> = corpus.docs[at..]
        .iter()
        .enumerate()
        .filter(|(_, d)| d.kind != DocKind::Episode)
        .map(|(i, doc)| write::Item {
            doc,
            meta: corpus.meta.get((at + i) as u32),
            vector: None,
        })
        .collect();
    if !graph.is_empty() {
        write::write_document(sql, write::GRAPH_DOCUMENT, &graph)
            .await
            .map_err(store_error)?;
        names.push(write::GRAPH_DOCUMENT);
    }
    options.progress.advance(1);
    options.progress.finish();
    let rows_deleted = write::keep_only(sql, &names).await.map_err(store_error)?;
    write::restate(sql).await.map_err(store_error)?;
    let description = options
        .description
        .clone()
        .or_else(|| describe::derive(&corpus.docs));
    write::describe(sql, description.as_deref())
        .await
        .map_err(store_error)?;
    Ok(StoreIngestSummary {
        source: plan.source.clone(),
        store: sql.name().to_owned(),
        stats: corpus.stats,
        documents_written: names.len(),
        rows_deleted,
        skipped: corpus.skipped.clone(),
        embedding: info,
        embedded: embedded.as_ref().map_or(0, |e| e.embedded),
        embedding_calls: embedded.as_ref().map_or(0, |e| e.calls),
    })
}
