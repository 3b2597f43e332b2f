//! The embedding cache beside a knowledge base: a vector is reused by the hash of what was
//! embedded (provider, model, dimensions asked for, passage prefix and passage text), so a
//! document with one changed paragraph re-embeds only that passage, on any machine.
//!
//! Two layers under `PREFIX/.sync/`:
//! - `embeddings/SCOPE/KEY`: one object per vector ever embedded (f32, little-endian). It
//!   outlives the documents that used it; an S3 lifecycle rule on the prefix is its retention
//!   (the SAM template sets one), after which a vector is embedded again when needed.
//! - `vectors-SCOPE.bin`: the vectors of every passage of the last version, in one object
//!   (records as the ingest staging file has them), so unchanged documents cost one read,
//!   not one per passage.
use super::objects::SyncObjects;
use crate::embed::Embedder;
use crate::ingest::embedding::{record, Key};
use crate::ingest::IngestError;
use crate::knowledge::hex;
use futures::StreamExt;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// Cache reads or writes in flight at once.
const CACHE_CONCURRENCY: usize = 16;

/// The vectors of one embedding scope (provider, model, dimensions, prefix).
pub(crate) struct EmbeddingCache<'a> {
    objects: &'a SyncObjects,
    /// Hex SHA-256 of the scope: every key and object name includes it.
    scope: String,
}

impl<'a> EmbeddingCache<'a> {
    /// The cache of what `embedder` makes with `passage_prefix`.
    pub(crate) fn new(objects: &'a SyncObjects, embedder: &dyn Embedder, prefix: &str) -> Self {
        let mut hash = Sha256::new();
        let dimensions = embedder
            .dimensions()
            .map_or_else(|| "native".to_owned(), |d| d.to_string());
        for part in [embedder.provider(), embedder.model(), &dimensions, prefix] {
            hash.update((part.len() as u64).to_le_bytes());
            hash.update(part.as_bytes());
        }
        Self {
            objects,
            scope: hex(&hash.finalize()),
        }
    }

    /// The key of the passage text `text` (prefix included) in this scope.
    pub(crate) fn key(&self, text: &str) -> Key {
        let mut hash = Sha256::new();
        hash.update(self.scope.as_bytes());
        hash.update(text.as_bytes());
        hash.finalize().into()
    }

    /// Where the cache is, for messages.
    pub(crate) fn location(&self) -> String {
        let key = self
            .objects
            .key(&format!("embeddings/{}", &self.scope[..16]));
        self.objects.store.location.url(&key)
    }

    fn snapshot_name(&self) -> String {
        format!("vectors-{}.bin", &self.scope[..16])
    }

    fn object_name(&self, key: &Key) -> String {
        format!("embeddings/{}/{}", &self.scope[..16], hex(key))
    }

    /// The last version's vectors (empty when there is none).
    pub(crate) async fn snapshot(&self) -> Result<HashMap<Key, Vec<f32>>, IngestError> {
        let bytes = self.objects.get(&self.snapshot_name()).await?;
        let mut out = HashMap::new();
        let (bytes, mut at) = (bytes.unwrap_or_default(), 0);
        while let Some((key, vector, next)) = record(&bytes, at) {
            out.insert(key, vector);
            at = next;
        }
        Ok(out)
    }

    /// Replaces the snapshot with `vectors`.
    pub(crate) async fn save_snapshot(&self, vectors: &[(Key, &[f32])]) -> Result<(), IngestError> {
        let mut bytes = Vec::new();
        for (key, vector) in vectors {
            encode(&mut bytes, key, vector);
        }
        self.objects.put(&self.snapshot_name(), bytes).await
    }

    /// The cached vectors of `keys` (those found).
    pub(crate) async fn get_many(
        &self,
        keys: &[Key],
    ) -> Result<HashMap<Key, Vec<f32>>, IngestError> {
        let mut found = HashMap::new();
        let mut gets = futures::stream::iter(keys)
            .map(|key| async move { (*key, self.objects.get(&self.object_name(key)).await) })
            .buffer_unordered(CACHE_CONCURRENCY);
        while let Some((key, got)) = gets.next().await {
            if let Some(bytes) = got? {
                let vector: Vec<f32> = bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                if !vector.is_empty() && bytes.len() % 4 == 0 {
                    found.insert(key, vector);
                }
            }
        }
        Ok(found)
    }

    /// Stores freshly embedded vectors.
    pub(crate) async fn put_many(&self, vectors: &[(Key, Vec<f32>)]) -> Result<(), IngestError> {
        let mut puts = futures::stream::iter(vectors)
            .map(|(key, vector)| async move {
                let bytes = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
                self.objects.put(&self.object_name(key), bytes).await
            })
            .buffer_unordered(CACHE_CONCURRENCY);
        while let Some(put) = puts.next().await {
            put?;
        }
        Ok(())
    }
}

/// One record of the snapshot: key, `u32` dimensions, the floats (little-endian).
fn encode(out: &mut Vec<u8>, key: &Key, vector: &[f32]) {
    out.extend_from_slice(key);
    out.extend_from_slice(&(vector.len() as u32).to_le_bytes());
    for x in vector {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_records_round_trip() {
        let mut bytes = Vec::new();
        encode(&mut bytes, &[1; 32], &[1.0, -2.5]);
        encode(&mut bytes, &[2; 32], &[3.0]);
        let (k1, v1, next) = record(&bytes, 0).unwrap();
        assert_eq!((k1, v1), ([1; 32], vec![1.0, -2.5]));
        let (k2, v2, end) = record(&bytes, next).unwrap();
        assert_eq!((k2, v2, end), ([2; 32], vec![3.0], bytes.len()));
        assert!(record(&bytes, end).is_none());
    }
}
