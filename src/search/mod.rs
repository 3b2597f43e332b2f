//! Knowledge access: the [`Retriever`] trait with the knowledge base, and the [`WebSearch`]
//! trait with a Tavily-compatible client.
//!
//! | module | owns |
//! |---|---|
//! | `stats` | what a knowledge base holds, counted |
//! | `layout` | the file names inside a bundle folder |
//! | `sources` | reading a folder: Markdown, text, HTML, the entity / relation / community JSONL |
//! | `bm25` | the tantivy index: schema, analyzer, build, open (memory-mapped or in memory) |
//! | [`bundle`] | the versioned on-disk bundle: manifest, content hash, ingest, open |
//! | [`embed`] | the OpenAI-compatible embeddings client |
//! | [`rerank`] | the Cohere/Jina/TEI-compatible rerank client |
//! | `filter`, `metadata` | metadata filters and the allowed set they make of a corpus |
//! | `graph` | the entity graph: one-hop relations and communities of matched entities |
//! | `hybrid` | quantized passage vectors, their flat scan, reciprocal rank fusion |
//! | [`s3`] | publishing bundles to S3 behind a pointer, listing and fetching them |
//! | `live` | the knowledge a function serves: loaded at start, refreshed between runs |
//! | `web` | the Tavily-compatible web search client |

mod bm25;
pub mod bundle;
mod cap;
pub mod embed;
mod error;
mod filter;
#[cfg(test)]
mod fixtures;
mod graph;
mod http;
mod hybrid;
mod kb;
mod layout;
mod live;
mod metadata;
pub mod rerank;
pub mod s3;
mod sources;
mod stats;
mod web;

pub use bundle::{
    ingest, ingest_dir, EmbeddingInfo, IngestOptions, IngestSummary, Manifest, NoProgress, Progress,
};
pub(crate) use cap::DEFAULT_MAX_PASSAGES_PER_DOCUMENT;
pub use embed::{
    BedrockEmbeddings, EmbedError, Embedder, Embeddings, EmbeddingsClient, EmbeddingsConfig,
};
pub use error::RetrievalError;
pub use filter::{Filter, FilterError};
pub use kb::KnowledgeBase;
pub use live::{check_compatible, check_embedding, LiveKnowledge, LoadOptions, RefreshOutcome};
pub use rerank::{Ranked, RerankClient, RerankConfig, RerankError, Reranker};
pub(crate) use sources::enable_parsers;
pub use sources::{DocumentInfo, Format, SkipReason, SkippedFile};
pub use stats::KbStats;
pub use web::{TavilyClient, TavilyConfig};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What kind of knowledge a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocKind {
    /// A passage of a source document (an "episode" of text).
    Episode,
    /// An entity (knowledge-graph node) with its summary.
    Node,
    /// A relation between two entities, stated as a fact.
    Edge,
    /// A summary of a group of related entities.
    Community,
    /// A web search result.
    Web,
}

/// One retrieved piece of context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// Stable id within its source (passage id, entity id, URL).
    pub id: String,
    /// Human title used in citations.
    pub title: String,
    /// Where it came from: a URL, or a `kb://` path for the knowledge base.
    pub url: String,
    /// The text given to the model.
    pub content: String,
    /// Search score (BM25 or the web engine's), higher is better.
    pub score: f32,
    /// Kind of knowledge.
    pub kind: DocKind,
    /// The knowledge base ranked it clearly relevant: first by BM25 with a clear lead over the
    /// next hit, or near the top of both the BM25 and the vector ranking. A grader that judges
    /// by shared words alone keeps such a document even when the question uses other words.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clear_match: bool,
    /// The knowledge base added it as a one-hop neighbour (a relation or community) of an
    /// entity the query matched, not as a search hit of its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_graph: bool,
}

/// Which ranking a knowledge-base retrieval used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetrievalMode {
    /// BM25 alone.
    Bm25,
    /// Reciprocal rank fusion of BM25 and vector similarity.
    Hybrid,
    /// BM25, then reordered by the rerank model.
    #[serde(rename = "bm25+rerank")]
    Bm25Rerank,
    /// Hybrid, then reordered by the rerank model.
    #[serde(rename = "hybrid+rerank")]
    HybridRerank,
}

impl RetrievalMode {
    /// The name in response metadata (`bm25`, `hybrid`, `bm25+rerank`, `hybrid+rerank`).
    pub fn as_str(self) -> &'static str {
        match self {
            RetrievalMode::Bm25 => "bm25",
            RetrievalMode::Hybrid => "hybrid",
            RetrievalMode::Bm25Rerank => "bm25+rerank",
            RetrievalMode::HybridRerank => "hybrid+rerank",
        }
    }

    /// The same ranking followed by the rerank stage.
    pub fn reranked(self) -> Self {
        match self {
            RetrievalMode::Bm25 | RetrievalMode::Bm25Rerank => RetrievalMode::Bm25Rerank,
            RetrievalMode::Hybrid | RetrievalMode::HybridRerank => RetrievalMode::HybridRerank,
        }
    }

    /// Whether the query is embedded (hybrid, reranked or not).
    pub(crate) fn is_hybrid(self) -> bool {
        matches!(self, RetrievalMode::Hybrid | RetrievalMode::HybridRerank)
    }
}

/// Which parts of the knowledge base a request searches, and how many results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetrievalOptions {
    /// Maximum documents returned (1..=10).
    pub limit: usize,
    /// Search entities.
    pub nodes: bool,
    /// Search relations.
    pub edges: bool,
    /// Search text passages.
    pub episodes: bool,
    /// Search community summaries.
    pub communities: bool,
    /// Only documents whose metadata passes (applied before the top `limit` is taken).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<Filter>,
}

impl Default for RetrievalOptions {
    fn default() -> Self {
        Self {
            limit: 3,
            nodes: true,
            edges: true,
            episodes: true,
            communities: false,
            filter: None,
        }
    }
}

/// Searches a knowledge store. Built once at init; cheap to call per request.
#[async_trait]
pub trait Retriever: Send + Sync {
    /// Best documents for `query` by BM25, best first, at most `options.limit`.
    async fn retrieve(
        &self,
        query: &str,
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError>;

    /// Best documents for `query` by reciprocal rank fusion of BM25 and the similarity of
    /// the passages' vectors to `vector` (the query's embedding). Stores without vectors
    /// rank by BM25 alone.
    async fn retrieve_hybrid(
        &self,
        query: &str,
        vector: &[f32],
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        let _ = vector;
        self.retrieve(query, options).await
    }

    /// The embedding model and dimensions of the stored vectors; `None` without vectors.
    fn embedding(&self) -> Option<EmbeddingInfo> {
        None
    }

    /// The version of the knowledge searched (a bundle's content hash), if it has one.
    fn version(&self) -> Option<String> {
        None
    }

    /// The fixed knowledge a run should search from its first step to its last, when this
    /// store can change between runs (a refreshed bundle); `None` when it never changes.
    fn snapshot(&self) -> Option<std::sync::Arc<dyn Retriever>> {
        None
    }
}

/// Searches the web. One attempt per call: retries belong to the engine.
#[async_trait]
pub trait WebSearch: Send + Sync {
    /// At most `max_results` results for `query`, within `timeout`.
    async fn search(
        &self,
        query: &str,
        max_results: usize,
        timeout: Duration,
    ) -> Result<Vec<Document>, RetrievalError>;
}
