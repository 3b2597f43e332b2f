//! Knowledge access: the [`Retriever`] trait with the embedded BM25 knowledge base, and the
//! [`WebSearch`] trait with a Tavily-compatible client.

mod corpus;
mod error;
mod graph;
mod index;
mod ingest;
mod kb;
mod passages;
mod readonly;
mod schema;
mod web;

pub use error::RetrievalError;
pub use ingest::ingest_dir;
pub use ingest::IngestSummary;
pub use kb::KbStats;
pub use kb::KnowledgeBase;
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
}

/// Which parts of the knowledge base a request searches, and how many results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
}

impl Default for RetrievalOptions {
    fn default() -> Self {
        Self {
            limit: 3,
            nodes: true,
            edges: true,
            episodes: true,
            communities: false,
        }
    }
}

/// Searches a knowledge store. Built once at init; cheap to call per request.
#[async_trait]
pub trait Retriever: Send + Sync {
    /// Best documents for `query`, best first, at most `options.limit`.
    async fn retrieve(
        &self,
        query: &str,
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError>;
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
