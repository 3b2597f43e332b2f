//! From a sync's state to a published version: the corpus rebuilt from every document's
//! reader output (nothing is read again), its passages' vectors taken from the embedding
//! cache or embedded, the bundle written exactly as `ingest` writes it (same plan, same
//! writer, so the same documents give the same version hash) and published as `kb publish`
//! publishes: files under the content hash, manifest last, then the pointer.
use super::embedding_cache::EmbeddingCache;
use super::objects::SyncObjects;
use super::state::{DocStatus, SyncState};
use crate::embed::Embedder;
use crate::ingest::embedding::{embed_with_retries, text_of, Embedded, Key};
use crate::ingest::options::IngestOptions;
use crate::ingest::pipeline;
use crate::ingest::plan::Plan;
use crate::ingest::sources::{self, SourceFile};
use crate::ingest::IngestError;
use crate::kb::{remove_dir_if_exists, BundleFolder};
use crate::knowledge::Corpus;
use crate::knowledge::{EmbeddingInfo, SkipReason, SkippedFile};
use futures::StreamExt;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// What a build published and what its vectors cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Built {
    /// The version (content hash) readers now load.
    pub version: String,
    /// Passage texts sent to the embedder.
    pub embedded: usize,
    /// Passages of changed documents whose vectors came from the cache.
    pub cached: usize,
    /// Whether the pointer moved (not when readers already load this version).
    pub published: bool,
}

/// The corpus of `state` (`root` names the source in errors; `unknown` are files of no
/// format ingest reads), as a folder ingest of the same files builds it.
pub(crate) fn corpus_of(
    state: &SyncState,
    root: &Path,
    unknown: &[SkippedFile],
) -> Result<Corpus, IngestError> {
    let mut files = Vec::new();
    let mut skipped = unknown.to_vec();
    for (rel, doc) in &state.documents {
        match &doc.status {
            DocStatus::Read {
                format,
                text,
                pages,
            } => files.push(SourceFile {
                path: root.join(rel),
                rel: rel.clone(),
                format: *format,
                text: text.clone(),
                pages: pages.clone(),
            }),
            DocStatus::Skipped { reason } => skipped.push(SkippedFile {
                path: rel.clone(),
                reason: reason.clone(),
            }),
            DocStatus::Failed { reason } => skipped.push(SkippedFile {
                path: rel.clone(),
                reason: SkipReason::Corrupt {
                    detail: reason.to_string(),
                },
            }),
        }
    }
    sources::build(root, &files, skipped)
}

/// Builds the bundle of `state` and publishes it at `objects`' destination. `changed` are the
/// relative paths of the documents added or modified since the last version.
pub(crate) async fn build_and_publish(
    state: &SyncState,
    root: &Path,
    unknown: &[SkippedFile],
    objects: &SyncObjects,
    options: &IngestOptions<'_>,
    changed: &HashSet<String>,
) -> Result<Built, IngestError> {
    let corpus = corpus_of(state, root, unknown)?;
    let work = std::env::temp_dir().join(format!("bounded-rag-sync-{}", uuid::Uuid::new_v4()));
    let folder = BundleFolder::in_work_folder(&work);
    let plan = Plan {
        source: root.to_path_buf(),
        staging: folder.staging().to_path_buf(),
        corpus,
    };
    let (vectors, embedded, cached) = match options.embedder {
        Some(embedder) => {
            let (vectors, cached) = vectors(&plan, embedder, objects, options, changed).await?;
            let embedded = vectors.embedded;
            (Some(vectors), embedded, cached)
        }
        None => (None, 0, 0),
    };
    let result = async {
        let summary = pipeline::write(
            plan,
            &folder,
            vectors,
            options.progress,
            options.description.as_deref(),
        )?;
        let version = summary.manifest.content_hash;
        let current = objects.store.pointer().await.ok().map(|p| p.version);
        // The same documents as the version readers load: nothing to publish.
        if current.as_deref() == Some(version.as_str()) {
            return Ok::<_, IngestError>((version, false));
        }
        let published = objects.store.publish(&summary.target).await?;
        Ok((published.version, true))
    }
    .await;
    remove_dir_if_exists(&work)?;
    let (version, published) = result?;
    Ok(Built {
        version,
        embedded,
        cached,
        published,
    })
}

/// The vectors of every passage of `plan`, in index order: from the last version's snapshot,
/// then the cache, then the embedder (stored in the cache at once). Returns them and how many
/// passages of `changed` documents the cache served.
async fn vectors(
    plan: &Plan,
    embedder: &dyn Embedder,
    objects: &SyncObjects,
    options: &IngestOptions<'_>,
    changed: &HashSet<String>,
) -> Result<(Embedded, usize), IngestError> {
    let cache = EmbeddingCache::new(objects, embedder, &options.passage_prefix);
    let texts: Vec<(Key, String, bool)> = plan
        .passages()
        .map(|d| {
            let text = text_of(&options.passage_prefix, &d.title, &d.content);
            let rel = d.id.rsplit_once('#').map_or(d.id.as_str(), |(rel, _)| rel);
            (cache.key(&text), text, changed.contains(rel))
        })
        .collect();
    let mut have = cache.snapshot().await?;
    let mut missing: Vec<Key> = texts.iter().map(|t| t.0).collect();
    missing.retain(|k| !have.contains_key(k));
    missing.sort_unstable();
    missing.dedup();
    have.extend(cache.get_many(&missing).await?);
    let (fresh, calls) = embed_missing(&cache, embedder, options, &texts, &have).await?;
    let queued: HashSet<Key> = fresh.keys().copied().collect();
    have.extend(fresh);
    let cached = texts
        .iter()
        .filter(|t| t.2 && !queued.contains(&t.0))
        .count();
    let ordered: Vec<Vec<f32>> = texts
        .iter()
        .map(|t| have.get(&t.0).cloned().unwrap_or_default())
        .collect();
    let dimensions = ordered.first().map_or(0, Vec::len);
    if ordered
        .iter()
        .any(|v| v.len() != dimensions || v.is_empty())
    {
        return Err(objects.invalid(
            "embeddings",
            format!(
                "the model `{}` gave vectors of different lengths",
                embedder.model()
            ),
        ));
    }
    let snapshot: HashMap<Key, &[f32]> = texts
        .iter()
        .zip(&ordered)
        .map(|(t, v)| (t.0, v.as_slice()))
        .collect();
    let mut snapshot: Vec<(Key, &[f32])> = snapshot.into_iter().collect();
    snapshot.sort_unstable_by_key(|(k, _)| *k);
    cache.save_snapshot(&snapshot).await?;
    let info = EmbeddingInfo {
        provider: embedder.provider().to_owned(),
        model: embedder.model().to_owned(),
        dimensions,
        quantization: "int8".into(),
        query_prefix: options.query_prefix.clone(),
        passage_prefix: options.passage_prefix.clone(),
    };
    let embedded = queued.len();
    Ok((
        Embedded {
            info,
            vectors: ordered,
            embedded,
            calls,
        },
        cached,
    ))
}

/// Embeds the texts of `texts` whose keys `have` lacks (each text once), in batches, storing
/// every vector in the cache as soon as its batch answers. Returns the new vectors and the
/// embeddings calls made.
pub(crate) async fn embed_missing<T>(
    cache: &EmbeddingCache<'_>,
    embedder: &dyn Embedder,
    options: &IngestOptions<'_>,
    texts: &[(Key, String, T)],
    have: &HashMap<Key, Vec<f32>>,
) -> Result<(HashMap<Key, Vec<f32>>, usize), IngestError>
where
    T: Sync,
{
    let mut queued = HashSet::new();
    let todo: Vec<(Key, &str)> = texts
        .iter()
        .filter(|t| !have.contains_key(&t.0) && queued.insert(t.0))
        .map(|t| (t.0, t.1.as_str()))
        .collect();
    options.progress.stage("embedding", todo.len() as u64);
    let mut pending = futures::stream::iter(todo.chunks(options.batch_size.max(1)))
        .map(|batch| async move {
            let inputs: Vec<String> = batch.iter().map(|t| t.1.to_owned()).collect();
            (batch, embed_with_retries(embedder, &inputs, options).await)
        })
        .buffer_unordered(options.concurrency.max(1));
    let (mut fresh, mut calls) = (HashMap::new(), 0);
    while let Some((batch, result)) = pending.next().await {
        let (got, attempts) = result.map_err(|source| IngestError::Interrupted {
            done: fresh.len(),
            total: todo.len(),
            staging: PathBuf::from(cache.location()),
            source,
        })?;
        calls += attempts;
        let got: Vec<(Key, Vec<f32>)> = batch.iter().map(|t| t.0).zip(got).collect();
        // Into the cache before anything else: a sync stopped later embeds none of it again.
        cache.put_many(&got).await?;
        fresh.extend(got);
        options.progress.advance(batch.len() as u64);
    }
    drop(pending);
    options.progress.finish();
    Ok((fresh, calls))
}
