//! Embedded BM25 knowledge base.
use super::{Document, RetrievalError, RetrievalOptions, Retriever};
use async_trait::async_trait;
use std::path::Path;

/// The knowledge base, indexed once at load.
pub struct KnowledgeBase;

impl KnowledgeBase {
    /// The sample knowledge base compiled into the binary.
    pub fn embedded() -> Result<Self, RetrievalError> {
        Err(RetrievalError::Unimplemented("kb"))
    }
    /// Loads a knowledge base folder (documents, or an ingested index).
    pub fn load(_path: &Path) -> Result<Self, RetrievalError> {
        Err(RetrievalError::Unimplemented("kb"))
    }
}

#[async_trait]
impl Retriever for KnowledgeBase {
    async fn retrieve(
        &self,
        _query: &str,
        _options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        Err(RetrievalError::Unimplemented("kb"))
    }
}
