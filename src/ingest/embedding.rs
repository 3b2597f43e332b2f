//! Embedding the passages of an ingest, in batches, resumable.
//!
//! Batches go out `EMBEDDINGS_CONCURRENCY` at a time. Every vector received is appended to
//! `embeddings-MODEL.bin` in the staging folder (and flushed) as soon as its batch answers: `[32-byte SHA-256 of the text][u32 dims][dims x
//! f32]`, little-endian. A run after an interruption reads that file first and sends only the
//! passages it does not hold, so nothing is embedded twice. A record cut short by the
//! interruption is dropped. The file goes away with the staging folder once the bundle is in
//! place.
use super::plan::Plan;
use crate::embed::{EmbedError, Embedder};
use crate::error::Classify;
use crate::ingest::options::IngestOptions;
use crate::ingest::IngestError;
use crate::knowledge::hex;
use crate::knowledge::EmbeddingInfo;
use futures::StreamExt;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The vectors of every passage, in index order.
pub(crate) struct Embedded {
    pub info: EmbeddingInfo,
    pub vectors: Vec<Vec<f32>>,
    /// Passages embedded by this run.
    pub embedded: usize,
    /// Embeddings calls made by this run.
    pub calls: usize,
}

pub(crate) type Key = [u8; 32];

/// The text embedded for a passage: the passage prefix, its title, a blank line, its content.
pub(crate) fn text_of(prefix: &str, title: &str, content: &str) -> String {
    format!("{prefix}{title}\n\n{content}")
}

fn key_of(text: &str) -> Key {
    Sha256::digest(text.as_bytes()).into()
}

/// Embeds every passage of `plan` not already in its staging folder.
pub(crate) async fn embed_passages(
    plan: &Plan,
    embedder: &dyn Embedder,
    options: &IngestOptions<'_>,
) -> Result<Embedded, IngestError> {
    fs::create_dir_all(&plan.staging).map_err(|e| IngestError::io(&plan.staging, e))?;
    let model = embedder.model();
    let cache_path = plan.staging.join(format!(
        "embeddings-{}.bin",
        &hex(&Sha256::digest(model.as_bytes()))[..16]
    ));
    let mut cache = Cache::open(&cache_path)?;
    let texts: Vec<(Key, String)> = plan
        .passages()
        .map(|d| {
            let text = text_of(&options.passage_prefix, &d.title, &d.content);
            (key_of(&text), text)
        })
        .collect();
    let mut todo: Vec<&(Key, String)> = Vec::new();
    let mut queued = std::collections::HashSet::new();
    for item in &texts {
        if !cache.vectors.contains_key(&item.0) && queued.insert(item.0) {
            todo.push(item);
        }
    }
    let total = texts.len();
    options.progress.stage("embedding", total as u64);
    options.progress.resumed((total - todo.len()) as u64);
    let batch_size = options.batch_size.max(1);
    let (mut embedded, mut calls) = (0, 0);
    // Up to `concurrency` batches in flight; each one's vectors are kept as soon as it
    // answers, so a failure loses nothing already received.
    let mut pending = futures::stream::iter(todo.chunks(batch_size))
        .map(|batch| async move {
            let inputs: Vec<String> = batch.iter().map(|(_, text)| text.clone()).collect();
            let result = embed_with_retries(embedder, &inputs, options).await;
            (batch, result)
        })
        .buffer_unordered(options.concurrency.max(1));
    while let Some((batch, result)) = pending.next().await {
        let (vectors, attempts) = result.map_err(|source| IngestError::Interrupted {
            done: total - todo.len() + embedded,
            total,
            staging: plan.staging.clone(),
            source,
        })?;
        calls += attempts;
        for ((key, _), vector) in batch.iter().zip(vectors) {
            cache.append(*key, vector)?;
        }
        embedded += batch.len();
        options.progress.advance(batch.len() as u64);
    }
    drop(pending);
    options.progress.finish();
    let vectors: Vec<Vec<f32>> = texts
        .iter()
        .map(|(key, _)| cache.vectors.get(key).cloned().unwrap_or_default())
        .collect();
    let dimensions = vectors.first().map_or(0, Vec::len);
    if vectors
        .iter()
        .any(|v| v.len() != dimensions || v.is_empty())
    {
        return Err(IngestError::Invalid {
            path: cache_path,
            message: format!(
                "the model `{model}` returned vectors of different lengths; delete {} and \
                 ingest again",
                plan.staging.display()
            ),
        });
    }
    Ok(Embedded {
        info: EmbeddingInfo {
            provider: embedder.provider().to_owned(),
            model: model.to_owned(),
            dimensions,
            quantization: "int8".into(),
            query_prefix: options.query_prefix.clone(),
            passage_prefix: options.passage_prefix.clone(),
        },
        vectors,
        embedded,
        calls,
    })
}

/// One batch with bounded retries of transient failures; returns the vectors and the calls.
pub(crate) async fn embed_with_retries(
    embedder: &dyn Embedder,
    inputs: &[String],
    options: &IngestOptions<'_>,
) -> Result<(Vec<Vec<f32>>, usize), EmbedError> {
    let mut retry = 0;
    loop {
        match embedder.embed(inputs, options.call_timeout).await {
            Ok(out) => return Ok((out.vectors, retry as usize + 1)),
            Err(e) if e.is_transient() && retry < options.retry.max_retries => {
                retry += 1;
                let delay = options
                    .retry
                    .delay(retry, e.retry_after(), &mut rand::rng());
                tracing::warn!(error = %e, ?delay, "embeddings call failed; retry {retry}");
                tokio::time::sleep(delay).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The vectors received so far, and the file they are appended to.
struct Cache {
    path: PathBuf,
    file: File,
    vectors: HashMap<Key, Vec<f32>>,
}

impl Cache {
    fn open(path: &Path) -> Result<Self, IngestError> {
        let io = |e| IngestError::io(path, e);
        let bytes = match fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io(e)),
        };
        let mut vectors = HashMap::new();
        let mut at = 0;
        while let Some((key, vector, next)) = record(&bytes, at) {
            vectors.insert(key, vector);
            at = next;
        }
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        // Drop a record cut short by an interruption, then append after the last whole one.
        file.set_len(at as u64).map_err(io)?;
        let mut cache = Self {
            path: path.to_path_buf(),
            file,
            vectors,
        };
        use std::io::Seek;
        cache
            .file
            .seek(std::io::SeekFrom::End(0))
            .map_err(|e| IngestError::io(&cache.path, e))?;
        Ok(cache)
    }

    fn append(&mut self, key: Key, vector: Vec<f32>) -> Result<(), IngestError> {
        let mut bytes = Vec::with_capacity(36 + vector.len() * 4);
        bytes.extend_from_slice(&key);
        bytes.extend_from_slice(&(vector.len() as u32).to_le_bytes());
        for x in &vector {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        let io = |e| IngestError::io(&self.path, e);
        self.file.write_all(&bytes).map_err(io)?;
        self.file.sync_data().map_err(io)?;
        self.vectors.insert(key, vector);
        Ok(())
    }
}

/// The record at `at`: key, vector and the offset after it; `None` at the end or when cut.
pub(crate) fn record(bytes: &[u8], at: usize) -> Option<(Key, Vec<f32>, usize)> {
    let key: Key = bytes.get(at..at + 32)?.try_into().ok()?;
    let dims = u32::from_le_bytes(bytes.get(at + 32..at + 36)?.try_into().ok()?) as usize;
    let end = at + 36 + dims.checked_mul(4)?;
    let vector = bytes
        .get(at + 36..end)?
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Some((key, vector, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_keeps_whole_records_and_drops_a_cut_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.bin");
        let mut cache = Cache::open(&path).unwrap();
        cache.append(key_of("a"), vec![1.0, 2.0]).unwrap();
        cache.append(key_of("b"), vec![3.0, 4.0]).unwrap();
        drop(cache);
        let len = fs::metadata(&path).unwrap().len();
        let file = OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(len - 3).unwrap(); // an interrupted write of "b"
        let mut cache = Cache::open(&path).unwrap();
        assert_eq!(cache.vectors.len(), 1);
        assert_eq!(cache.vectors[&key_of("a")], vec![1.0, 2.0]);
        cache.append(key_of("c"), vec![5.0, 6.0]).unwrap();
        drop(cache);
        let cache = Cache::open(&path).unwrap();
        assert_eq!(cache.vectors.len(), 2);
        assert_eq!(cache.vectors[&key_of("c")], vec![5.0, 6.0]);
    }
}
