//! `kb sync SOURCE postgres://...` (or `rds-data://...`): a sync whose destination is a
//! PostgreSQL store instead of published bundles. The comparison is the bundle sync's
//! ([`compare`]: only files whose fingerprint moved are fetched and read); the state it keeps
//! lives in the database (`bounded_rag_sync`, written after the changes). Only the changed
//! documents are written, each in one transaction, and only their passages that the store
//! holds no vector for are embedded; documents gone from the source are deleted. A metadata
//! sidecar or a graph file that changed, or a first sync, writes every document.
use super::build::corpus_of;
use super::run::{compare, Compared};
use super::state::SyncState;
use super::summary::SyncSummary;
use super::SyncSource;
use crate::ingest::embedding::{embed_with_retries, text_of};
use crate::ingest::into_store::{documents, write_documents};
use crate::ingest::options::IngestOptions;
use crate::ingest::sources::{enable_parsers, graph_kind, is_sidecar};
use crate::kb::bundle::format::EmbeddingInfo;
use crate::kb::postgres::sql::{first_text, Statement};
use crate::kb::postgres::{schema, schema_error, write, Sql, SqlError};
use crate::search::{DocKind, RetrievalError};
use base64::Engine as _;
use std::collections::HashMap;
use std::path::Path;

/// Syncs `source` into the store `sql`.
pub(crate) async fn sync_into_store(
    source: &SyncSource,
    sql: &dyn Sql,
    options: &IngestOptions<'_>,
) -> Result<SyncSummary, RetrievalError> {
    enable_parsers();
    let fail = |e: SqlError| schema_error(sql.name(), schema::SchemaError::Sql(e));
    let old = load(sql).await.map_err(fail)?;
    let compared = compare(source, &old).await?;
    if compared.nothing_new(&old) {
        if compared.next != old {
            save(sql, &compared.next).await.map_err(fail)?;
        }
        let mut summary = compared.summary;
        summary.version = old.version;
        return Ok(summary);
    }
    let Compared {
        mut next,
        changed,
        unknown,
        mut summary,
    } = compared;
    let corpus = corpus_of(&next, &source.root(), &unknown)?;
    let everything = old.version.is_none()
        || changed
            .iter()
            .any(|rel| is_sidecar(rel) || graph_kind(Path::new(rel)).is_some());

    let groups = documents(&corpus, |path| everything || changed.contains(path));

    // Vectors for the passages written whose row holds none yet.
    let mut vectors: HashMap<usize, Vec<f32>> = HashMap::new();
    let mut info: Option<EmbeddingInfo> = None;
    if let Some(embedder) = options.embedder {
        let mut keyed = Vec::new();
        for (document, positions) in &groups {
            let docs = positions.iter().map(|i| &corpus.docs[*i]);
            keyed.extend(
                positions
                    .iter()
                    .copied()
                    .zip(write::row_hashes(document, docs)),
            );
        }
        let keyed: Vec<(usize, String)> = keyed
            .into_iter()
            .filter(|(i, _)| corpus.docs[*i].kind == DocKind::Episode)
            .collect();
        let hashes: Vec<String> = keyed.iter().map(|k| k.1.clone()).collect();
        // A store not written yet holds no vectors.
        let have = match schema::read(sql).await {
            Ok(_) => write::with_vectors(sql, &hashes).await.map_err(fail)?,
            Err(_) => Default::default(),
        };
        let todo: Vec<usize> = keyed
            .iter()
            .filter(|(_, h)| !have.contains(h))
            .map(|(i, _)| *i)
            .collect();
        options.progress.stage("embedding", todo.len() as u64);
        for batch in todo.chunks(options.batch_size.max(1)) {
            let inputs: Vec<String> = batch
                .iter()
                .map(|i| {
                    text_of(
                        &options.passage_prefix,
                        &corpus.docs[*i].title,
                        &corpus.docs[*i].content,
                    )
                })
                .collect();
            let (got, _calls) = embed_with_retries(embedder, &inputs, options)
                .await
                .map_err(|source| RetrievalError::Interrupted {
                    done: summary.embedded_passages,
                    total: todo.len(),
                    staging: sql.name().into(),
                    source,
                })?;
            summary.embedded_passages += got.len();
            vectors.extend(batch.iter().copied().zip(got));
            options.progress.advance(batch.len() as u64);
        }
        options.progress.finish();
        summary.cached_passages = keyed.len() - todo.len();
        info = vectors.values().next().map(|v| EmbeddingInfo {
            provider: embedder.provider().to_owned(),
            model: embedder.model().to_owned(),
            dimensions: v.len(),
            quantization: "none".into(),
            query_prefix: options.query_prefix.clone(),
            passage_prefix: options.passage_prefix.clone(),
        });
    }
    schema::ensure(sql, info.as_ref(), options.tenant_key.as_deref())
        .await
        .map_err(|e| schema_error(sql.name(), e))?;

    write_documents(
        sql,
        &corpus,
        &groups,
        |i| vectors.get(&i).map(Vec::as_slice),
        options,
    )
    .await?;
    let version = content_version(&next);
    next.version = Some(version.clone());
    save(sql, &next).await.map_err(fail)?;
    summary.published = true;
    summary.version = Some(version);
    Ok(summary)
}

/// A version for the synced documents: a hash of every path and content hash.
fn content_version(state: &SyncState) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for (rel, doc) in &state.documents {
        h.update(rel.as_bytes());
        h.update([0]);
        h.update(doc.hash.as_bytes());
        h.update([0]);
    }
    crate::kb::bundle::format::hex(&h.finalize())
}

/// The last sync's state, or an empty one.
async fn load(sql: &dyn Sql) -> Result<SyncState, SqlError> {
    let rows = match sql
        .query(&Statement::new(
            "SELECT state FROM bounded_rag_sync",
            vec![],
        ))
        .await
    {
        Err(e) if e.code.as_deref() == Some(schema::UNDEFINED_TABLE) => {
            return Ok(SyncState::default())
        }
        other => other?,
    };
    let Some(text) = first_text(&rows) else {
        return Ok(SyncState::default());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| SqlError::permanent(format!("bounded_rag_sync.state: {e}")))?;
    SyncState::decode(&bytes)
        .map_err(|e| SqlError::permanent(format!("bounded_rag_sync.state: {e}")))
}

/// Stores the state (after the changes it describes are written).
async fn save(sql: &dyn Sql, state: &SyncState) -> Result<(), SqlError> {
    let text = base64::engine::general_purpose::STANDARD.encode(state.encode());
    sql.transaction(&[
        Statement::new(
            "CREATE TABLE IF NOT EXISTS bounded_rag_sync (\
               singleton bool PRIMARY KEY DEFAULT true CHECK (singleton), \
               state text NOT NULL, \
               updated_at timestamptz NOT NULL DEFAULT now())",
            vec![],
        ),
        Statement::new(
            "INSERT INTO bounded_rag_sync (state) VALUES (CAST($1 AS text)) \
             ON CONFLICT (singleton) DO UPDATE SET state = EXCLUDED.state, updated_at = now()",
            vec![text.into()],
        ),
    ])
    .await
}
