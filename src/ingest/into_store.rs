//! `ingest DIR --out postgres://...` (or `rds-data://...`): the same sources, passages and
//! vectors as a bundle, written into PostgreSQL instead, a document per transaction; documents
//! no longer in the folder are deleted at the end, so the database mirrors the folder.
use super::describe;
use super::embedding::embed_passages;
use super::options::IngestOptions;
use super::plan::Plan;
use super::sources::enable_parsers;
use super::sources::Corpus;
use crate::kb::bundle::format::{EmbeddingInfo, KbStats, SkippedFile};
use crate::kb::postgres::{schema, schema_error, write, Sql, SqlError};
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
        &crate::kb::bundle::format::hex(&Sha256::digest(
            format!("{}\n{}", source.display(), sql.name()).as_bytes()
        ))[..16]
    ));
    let plan = Plan::for_store(source, staging, options.strict)?;
    let embedded = match options.embedder {
        Some(embedder) => Some(embed_passages(&plan, embedder, options).await?),
        None => None,
    };
    let info = embedded.as_ref().map(|e| e.info.clone());
    schema::ensure(sql, info.as_ref(), options.tenant_key.as_deref())
        .await
        .map_err(|e| schema_error(sql.name(), e))?;

    let corpus = &plan.corpus;
    let vectors = embedded.as_ref().map(|e| &e.vectors);
    // Passages come first in a corpus, in the order of their vectors.
    let groups = documents(corpus, |_| true);
    let rows_deleted = write_documents(
        sql,
        corpus,
        &groups,
        |i| vectors.and_then(|v| v.get(i)).map(Vec::as_slice),
        options,
    )
    .await?;
    Ok(StoreIngestSummary {
        source: plan.source.clone(),
        store: sql.name().to_owned(),
        stats: corpus.stats,
        documents_written: groups.len(),
        rows_deleted,
        skipped: corpus.skipped.clone(),
        embedding: info,
        embedded: embedded.as_ref().map_or(0, |e| e.embedded),
        embedding_calls: embedded.as_ref().map_or(0, |e| e.calls),
    })
}

/// The documents of `corpus` for which `selected(path)` holds, each with its items' corpus
/// positions; the graph items (entities, relations, communities) as one document,
/// [`write::GRAPH_DOCUMENT`], when it is selected.
pub(crate) fn documents(
    corpus: &Corpus,
    selected: impl Fn(&str) -> bool,
) -> Vec<(String, Vec<usize>)> {
    let mut groups = Vec::new();
    let mut at = 0;
    for info in &corpus.documents {
        if selected(&info.path) {
            groups.push((info.path.clone(), (at..at + info.passages).collect()));
        }
        at += info.passages;
    }
    let graph: Vec<usize> = (at..corpus.docs.len())
        .filter(|i| corpus.docs[*i].kind != DocKind::Episode)
        .collect();
    if !graph.is_empty() && selected(write::GRAPH_DOCUMENT) {
        groups.push((write::GRAPH_DOCUMENT.to_owned(), graph));
    }
    groups
}

/// Writes `groups` of `corpus` (each document in one transaction, the vector of position `i`
/// being `vector(i)`), deletes the documents `corpus` no longer holds, brings the store's
/// counts up to date and records the description (`options.description`, else derived).
/// Returns the rows deleted.
pub(crate) async fn write_documents<'v>(
    sql: &dyn Sql,
    corpus: &Corpus,
    groups: &[(String, Vec<usize>)],
    vector: impl Fn(usize) -> Option<&'v [f32]>,
    options: &IngestOptions<'_>,
) -> Result<i64, RetrievalError> {
    let fail = |e: SqlError| schema_error(sql.name(), schema::SchemaError::Sql(e));
    options.progress.stage("writing", groups.len() as u64);
    for (document, positions) in groups {
        let items: Vec<write::Item<'_>> = positions
            .iter()
            .map(|i| write::Item {
                doc: &corpus.docs[*i],
                meta: corpus.meta.get(*i as u32),
                vector: vector(*i),
            })
            .collect();
        write::write_document(sql, document, &items)
            .await
            .map_err(fail)?;
        options.progress.advance(1);
    }
    options.progress.finish();
    let names: Vec<String> = documents(corpus, |_| true)
        .into_iter()
        .map(|g| g.0)
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let rows_deleted = write::keep_only(sql, &names).await.map_err(fail)?;
    write::restate(sql, options.tenant_index_rows)
        .await
        .map_err(fail)?;
    let description = options
        .description
        .clone()
        .or_else(|| describe::derive(&corpus.docs));
    write::describe(sql, description.as_deref())
        .await
        .map_err(fail)?;
    Ok(rows_deleted)
}
