//! Which embedding model made a knowledge base's vectors: recorded by every store that keeps
//! vectors (a bundle's manifest, PostgreSQL's metadata row) and checked at search time.

use serde::{Deserialize, Serialize};

/// The embedding model of a knowledge base's vectors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddingInfo {
    /// Who computed the vectors: `openai` (an OpenAI-compatible server) or `bedrock`. Empty in
    /// bundles written before providers were recorded (they are `openai`'s).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider: String,
    /// Model name as sent to the embeddings endpoint.
    pub model: String,
    /// Dimensions of every vector.
    pub dimensions: usize,
    /// How vectors are stored (`int8`: unit vectors, one byte per dimension and a scale).
    pub quantization: String,
    /// Put before every query at search time (`EMBEDDINGS_QUERY_PREFIX` at ingest, e.g.
    /// `query: ` for E5 models). Empty in bundles written before prefixes existed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub query_prefix: String,
    /// Put before every passage when it was embedded (`EMBEDDINGS_PASSAGE_PREFIX`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub passage_prefix: String,
}

impl EmbeddingInfo {
    /// [`EmbeddingInfo::provider`], `openai` when the bundle predates it.
    pub(crate) fn provider(&self) -> &str {
        if self.provider.is_empty() {
            "openai"
        } else {
            &self.provider
        }
    }
}
