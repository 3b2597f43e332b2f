//! The knowledge-store seam: [`Retriever`], searched by the workflow, implemented by the
//! knowledge base ([`super::knowledge_base::KnowledgeBase`]) and the refreshed S3 bundle
//! ([`super::bundle::LiveKnowledge`]).
use crate::knowledge::Document;
use crate::knowledge::EmbeddingInfo;
use crate::search::Ranking;
use crate::search::RetrievalError;
use crate::search::RetrievalOptions;
use async_trait::async_trait;

/// A document a search returned, with how it ranked (`None` where the store cannot tell).
#[derive(Debug, Clone, PartialEq)]
pub struct Explained {
    /// What was found.
    pub document: Document,
    /// How it ranked; `None` where the store cannot tell.
    pub ranking: Option<Ranking>,
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

    /// The search [`Retriever::retrieve_hybrid`] makes (with `vector`) or
    /// [`Retriever::retrieve`] (without), each document with how it ranked, where the store
    /// can tell (`kb search --explain`); stores that rank elsewhere (Bedrock) give `None`.
    async fn explain(
        &self,
        query: &str,
        vector: Option<&[f32]>,
        options: &RetrievalOptions,
    ) -> Result<Vec<Explained>, RetrievalError> {
        let documents = match vector {
            Some(vector) => self.retrieve_hybrid(query, vector, options).await?,
            None => self.retrieve(query, options).await?,
        };
        Ok(documents
            .into_iter()
            .map(|document| Explained {
                document,
                ranking: None,
            })
            .collect())
    }

    /// Whether a search is a call to another service (whose transient failures are worth
    /// retrying), not a search of an index in this process.
    fn is_remote(&self) -> bool {
        false
    }

    /// The embedding model and dimensions of the stored vectors; `None` without vectors.
    fn embedding(&self) -> Option<EmbeddingInfo> {
        None
    }

    /// What the knowledge searched covers, in a few sentences, for the router; `None` when
    /// undescribed.
    fn description(&self) -> Option<String> {
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
