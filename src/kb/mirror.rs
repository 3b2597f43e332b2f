//! The seam ingest and sync write a database-like store through: a [`Mirror`] of a source,
//! kept document by document, so the database holds what the source holds (PostgreSQL's is
//! `postgres/mirror.rs`). A bundle is written whole instead, by
//! [`BundleFolder`](super::BundleFolder). A new store of this kind implements this trait and
//! is opened by [`open_writer`](super::open_writer); ingest, sync and the CLI stay as they are.
use crate::knowledge::{Corpus, EmbeddingInfo, Group, Progress};
use crate::search::RetrievalError;
use async_trait::async_trait;
use std::path::{Path, PathBuf};

/// A store kept as a mirror of a source, one document per write.
#[async_trait]
pub(crate) trait Mirror: Send + Sync {
    /// The store's location, without secrets (the `KB_URI` to read it with).
    fn location(&self) -> String;

    /// The store's name in messages.
    fn name(&self) -> &str;

    /// Where an ingest of `source` into this store keeps resumable embeddings.
    fn staging_for(&self, source: &Path) -> PathBuf;

    /// Makes the store ready for vectors of `embedding` (or none) and tenants under
    /// `tenant_key`; refuses a store kept for another model or tenant key.
    async fn prepare(
        &self,
        embedding: Option<&EmbeddingInfo>,
        tenant_key: Option<&str>,
    ) -> Result<(), RetrievalError>;

    /// Writes `groups` of `corpus` (each document at once; the vector of position `i` is
    /// `vector(i)`), deletes the documents `corpus` no longer holds, brings the store's counts
    /// up to date (tenant indexes from `tenant_index_rows` rows) and records `description`.
    /// Returns the rows deleted.
    #[allow(clippy::too_many_arguments)]
    async fn write<'v>(
        &self,
        corpus: &Corpus,
        groups: &[Group],
        vector: &(dyn Fn(usize) -> Option<&'v [f32]> + Sync),
        progress: &dyn Progress,
        tenant_index_rows: u64,
        description: Option<&str>,
    ) -> Result<i64, RetrievalError>;

    /// Of the passages in `groups`, the corpus positions the store holds no vector for yet,
    /// and how many passages `groups` hold.
    async fn passages_without_vectors(
        &self,
        corpus: &Corpus,
        groups: &[Group],
    ) -> Result<(Vec<usize>, usize), RetrievalError>;

    /// The state the last sync saved (in its own encoding), or `None` before the first.
    async fn sync_state(&self) -> Result<Option<Vec<u8>>, RetrievalError>;

    /// Stores a sync's state (after the changes it describes are written).
    async fn save_sync_state(&self, state: &[u8]) -> Result<(), RetrievalError>;

    /// A saved sync state that does not decode, as the store's error.
    fn invalid_sync_state(&self, why: &str) -> RetrievalError;
}
