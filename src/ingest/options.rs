//! How an ingest runs: its options (the embedder, batches, retries, prefixes, `--strict`) and
//! where its progress goes ([`Progress`](crate::knowledge::Progress), shared with the writers).
use crate::config::{EmbeddingsTuning, DEFAULT_INGEST_RETRY};
use crate::embed::Embedder;
use crate::knowledge::{NoProgress, Progress};
use crate::retry::RetryPolicy;
use std::time::Duration;

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
    /// What the knowledge base covers, recorded in the manifest for the router
    /// (`ingest --description`); derived from the documents' titles and headings when `None`.
    pub description: Option<String>,
    /// The metadata key a PostgreSQL store keeps in its indexed `tenant` column
    /// (`KB_TENANT_KEY`), set when the store is created; bundles ignore it.
    pub tenant_key: Option<String>,
    /// The rows from which a tenant of a PostgreSQL store gets a vector index of its own
    /// (`KB_TENANT_INDEX_ROWS`; 0: none).
    pub tenant_index_rows: u64,
}

impl Default for IngestOptions<'_> {
    /// BM25 only, with config's defaults for the embeddings settings (`EMBEDDINGS_*` unset)
    /// and the batch retries.
    fn default() -> Self {
        Self::tuned(&EmbeddingsTuning::default())
    }
}

impl IngestOptions<'_> {
    /// BM25 only, with the embeddings settings `tuning` (`EMBEDDINGS_*`) for when an embedder
    /// is set, and the batch retries.
    pub(crate) fn tuned(tuning: &EmbeddingsTuning) -> Self {
        Self {
            embedder: None,
            batch_size: tuning.batch_size,
            retry: DEFAULT_INGEST_RETRY,
            call_timeout: tuning.timeout,
            concurrency: tuning.concurrency,
            passage_prefix: tuning.passage_prefix.clone(),
            query_prefix: tuning.query_prefix.clone(),
            progress: &NoProgress,
            strict: false,
            description: None,
            tenant_key: None,
            tenant_index_rows: crate::config::DEFAULT_TENANT_INDEX_ROWS,
        }
    }
}
