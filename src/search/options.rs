//! What a request asks of the knowledge base ([`RetrievalOptions`]: kinds, limit, filter) and
//! which ranking answered it ([`RetrievalMode`]).
use super::filter::Filter;
use serde::{Deserialize, Serialize};

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
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RetrievalMode::Bm25 => "bm25",
            RetrievalMode::Hybrid => "hybrid",
            RetrievalMode::Bm25Rerank => "bm25+rerank",
            RetrievalMode::HybridRerank => "hybrid+rerank",
        }
    }

    /// The same ranking followed by the rerank stage.
    pub(crate) fn reranked(self) -> Self {
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
