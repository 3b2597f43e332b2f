//! Web search: the [`WebSearch`] seam and its Tavily-compatible client.
//!
//! `POST {base_url}/search` with `{"query", "max_results"}` and `Authorization: Bearer <key>`
//! when a key is configured; the answer `{"results": [{"title", "url", "content", "score"}]}`
//! becomes [`DocKind::Web`] documents. One attempt per call within the caller's timeout (the
//! engine owns retries); the connection pool is shared by every call. The key never appears in
//! errors or logs: [`Secret`] redacts itself and error bodies are scrubbed.
use super::web_error::WebSearchError;
use crate::knowledge::{DocKind, Document};
use crate::outbound::status_is_transient;
use crate::outbound::{CallFailure, JsonEndpoint};
use crate::secrets::Secret;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Searches the web. One attempt per call: retries belong to the engine.
#[async_trait]
pub trait WebSearch: Send + Sync {
    /// At most `max_results` results for `query`, within `timeout`.
    async fn search(
        &self,
        query: &str,
        max_results: usize,
        timeout: Duration,
    ) -> Result<Vec<Document>, WebSearchError>;
}

/// Settings of the web search client.
#[derive(Debug, Clone)]
pub struct TavilyConfig {
    /// Base URL; the client posts to `{base_url}/search`.
    pub base_url: String,
    /// Bearer key; `None` sends no `Authorization` header (e.g. a local test server).
    pub api_key: Option<Secret>,
}

impl TavilyConfig {
    /// Tavily's public endpoint.
    #[cfg(test)]
    pub(crate) const DEFAULT_BASE_URL: &'static str = "https://api.tavily.com";
}

/// Tavily-compatible client. Build once; clones share the connection pool.
#[derive(Debug, Clone)]
pub struct TavilyClient {
    endpoint: JsonEndpoint,
}

#[derive(Serialize)]
struct SearchRequest<'a> {
    query: &'a str,
    max_results: usize,
}

#[derive(Deserialize)]
struct SearchResponse {
    results: Vec<SearchResult>,
}

#[derive(Deserialize)]
struct SearchResult {
    #[serde(default)]
    title: Option<String>,
    url: String,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    score: Option<f32>,
}

impl TavilyClient {
    /// Builds the client once; fails on a base URL that is not http(s).
    pub fn new(config: TavilyConfig) -> Result<Self, WebSearchError> {
        let endpoint = JsonEndpoint::new(&config.base_url, "search", config.api_key)
            .map_err(WebSearchError::Config)?;
        Ok(Self { endpoint })
    }

    /// The URL searches are posted to.
    #[cfg(test)]
    pub(crate) fn endpoint(&self) -> &str {
        self.endpoint.url()
    }
}

#[async_trait]
impl WebSearch for TavilyClient {
    async fn search(
        &self,
        query: &str,
        max_results: usize,
        timeout: Duration,
    ) -> Result<Vec<Document>, WebSearchError> {
        if max_results == 0 {
            return Ok(Vec::new());
        }
        let body = SearchRequest { query, max_results };
        let text = self
            .endpoint
            .post(&body, timeout)
            .await
            .inspect_err(|failure| {
                if let CallFailure::Http(f) = failure {
                    let transient = status_is_transient(f.status);
                    tracing::debug!(status = f.status, transient, "web search failed");
                }
            })?;
        let parsed: SearchResponse = serde_json::from_str(&text)
            .map_err(|e| WebSearchError::InvalidResponse(e.to_string()))?;
        Ok(parsed
            .results
            .into_iter()
            .take(max_results)
            .map(|result| Document {
                id: result.url.clone(),
                title: result
                    .title
                    .filter(|t| !t.trim().is_empty())
                    .unwrap_or_else(|| result.url.clone()),
                url: result.url,
                content: result.content.unwrap_or_default(),
                score: result.score.unwrap_or(0.0),
                kind: DocKind::Web,
                clear_match: false,
                from_graph: false,
                vector_rank: None,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(base_url: &str, key: Option<&str>) -> Result<TavilyClient, WebSearchError> {
        TavilyClient::new(TavilyConfig {
            base_url: base_url.into(),
            api_key: key.map(Secret::new),
        })
    }

    #[test]
    fn endpoint_is_base_url_plus_search() {
        let c = client("http://127.0.0.1:9/v1/", None).unwrap();
        assert_eq!(c.endpoint(), "http://127.0.0.1:9/v1/search");
        assert!(matches!(
            client("not a url", None),
            Err(WebSearchError::Config(_))
        ));
        assert!(matches!(
            client("ftp://x", None),
            Err(WebSearchError::Config(_))
        ));
    }

    #[test]
    fn the_key_never_shows_in_debug_or_scrubbed_text() {
        let c = client(TavilyConfig::DEFAULT_BASE_URL, Some("tvly-SECRET")).unwrap();
        assert!(!format!("{c:?}").contains("tvly-SECRET"));
        assert_eq!(
            c.endpoint.scrub("bad key tvly-SECRET"),
            "bad key [redacted]"
        );
    }

    #[tokio::test]
    async fn unreachable_servers_are_transient() {
        use crate::error::Classify;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .unwrap()
            .port();
        let c = client(&format!("http://127.0.0.1:{port}"), None).unwrap();
        let err = c.search("q", 3, Duration::from_secs(5)).await.unwrap_err();
        assert!(err.is_transient(), "{err}");
        assert!(c
            .search("q", 0, Duration::from_secs(5))
            .await
            .unwrap()
            .is_empty());
    }
}
