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
use crate::ingest::describe;
use crate::ingest::embedding::{embed_with_retries, text_of};
use crate::ingest::options::IngestOptions;
use crate::ingest::sources::{enable_parsers, graph_kind, is_sidecar};
use crate::ingest::IngestError;
use crate::kb::Mirror;
use crate::knowledge::EmbeddingInfo;
use std::collections::HashMap;
use std::path::Path;

/// Syncs `source` into `store`, a database kept as its mirror (PostgreSQL).
pub(crate) async fn sync_into_store(
    source: &SyncSource,
    store: &dyn Mirror,
    options: &IngestOptions<'_>,
) -> Result<SyncSummary, IngestError> {
    enable_parsers();
    let old = load(store).await?;
    let compared = compare(source, &old).await?;
    if compared.nothing_new(&old) {
        if compared.next != old {
            store.save_sync_state(&compared.next.encode()).await?;
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

    let groups = corpus.groups(|path| everything || changed.contains(path));

    // Vectors for the passages written whose row holds none yet.
    let mut vectors: HashMap<usize, Vec<f32>> = HashMap::new();
    let mut info: Option<EmbeddingInfo> = None;
    if let Some(embedder) = options.embedder {
        let (todo, passages) = store.passages_without_vectors(&corpus, &groups).await?;
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
                .map_err(|source| IngestError::Interrupted {
                    done: summary.embedded_passages,
                    total: todo.len(),
                    staging: store.name().into(),
                    source,
                })?;
            summary.embedded_passages += got.len();
            vectors.extend(batch.iter().copied().zip(got));
            options.progress.advance(batch.len() as u64);
        }
        options.progress.finish();
        summary.cached_passages = passages - todo.len();
        info = vectors.values().next().map(|v| EmbeddingInfo {
            provider: embedder.provider().to_owned(),
            model: embedder.model().to_owned(),
            dimensions: v.len(),
            quantization: "none".into(),
            query_prefix: options.query_prefix.clone(),
            passage_prefix: options.passage_prefix.clone(),
        });
    }
    store
        .prepare(info.as_ref(), options.tenant_key.as_deref())
        .await?;

    let description = describe::given_or_derived(options.description.as_deref(), &corpus.docs);
    store
        .write(
            &corpus,
            &groups,
            &|i| vectors.get(&i).map(Vec::as_slice),
            options.progress,
            options.tenant_index_rows,
            description.as_deref(),
        )
        .await?;
    let version = content_version(&next);
    next.version = Some(version.clone());
    store.save_sync_state(&next.encode()).await?;
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
    crate::knowledge::hex_digest(h)
}

/// The last sync's state, or an empty one.
async fn load(store: &dyn Mirror) -> Result<SyncState, IngestError> {
    match store.sync_state().await? {
        None => Ok(SyncState::default()),
        Some(bytes) => SyncState::decode(&bytes).map_err(|e| store.invalid_sync_state(&e).into()),
    }
}
