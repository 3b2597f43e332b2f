//! Tavily-compatible web search client.
use super::{Document, RetrievalError, WebSearch};
use async_trait::async_trait;
use std::time::Duration;

/// Settings of the web search client.
#[derive(Debug, Clone)]
pub struct TavilyConfig {
    /// Base URL; the client posts to `{base_url}/search`.
    pub base_url: String,
    /// Bearer key.
    pub api_key: Option<String>,
}

/// Tavily-compatible client.
#[derive(Debug, Clone)]
pub struct TavilyClient {
    config: TavilyConfig,
}

impl TavilyClient {
    /// Builds the client once.
    pub fn new(config: TavilyConfig) -> Result<Self, RetrievalError> {
        Ok(Self { config })
    }
}

#[async_trait]
impl WebSearch for TavilyClient {
    async fn search(
        &self,
        _query: &str,
        _max_results: usize,
        _timeout: Duration,
    ) -> Result<Vec<Document>, RetrievalError> {
        let _ = &self.config;
        Err(RetrievalError::Unimplemented("web"))
    }
}
