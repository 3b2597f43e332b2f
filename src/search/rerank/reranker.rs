//! The [`Reranker`] seam: documents in, the most relevant first.
use super::error::RerankError;
use async_trait::async_trait;
use std::time::Duration;

/// One reranked document: its index in the input and its relevance, higher is better.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranked {
    /// Position of the document in the call's input.
    pub index: usize,
    /// The model's relevance score.
    pub score: f32,
}

/// Orders documents by relevance to a query. Built once; shared by every request.
#[async_trait]
pub trait Reranker: Send + Sync {
    /// The at most `top_n` most relevant of `documents` (at least one), best first, within
    /// `timeout`.
    async fn rerank(
        &self,
        query: &str,
        documents: &[String],
        top_n: usize,
        timeout: Duration,
    ) -> Result<Vec<Ranked>, RerankError>;
}
