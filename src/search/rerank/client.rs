//! The rerank client: `POST {base_url}/rerank` with `{"model"?, "query", "documents",
//! "top_n"}` and `Authorization: Bearer <key>` when a key is configured. The answer is
//! Cohere's and Jina's `{"results": [{"index", "relevance_score"}]}`, or TEI's bare
//! `[{"index", "score"}]`; it is checked (indices in range and distinct, finite scores) and
//! sorted best first.
use super::error::RerankError;
use super::reranker::{Ranked, Reranker};
use crate::outbound::JsonEndpoint;
use crate::secrets::Secret;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::time::Duration;

/// Settings of the rerank client.
#[derive(Debug, Clone)]
pub struct RerankConfig {
    /// Base URL, e.g. `https://api.cohere.com/v2` or `http://127.0.0.1:8080`.
    pub base_url: String,
    /// Model name; `None` sends none (TEI serves one model).
    pub model: Option<String>,
    /// Bearer key; `None` sends no `Authorization` header.
    pub api_key: Option<Secret>,
}

/// Cohere/Jina/TEI-compatible rerank client. Build once; clones share the connection pool.
#[derive(Debug, Clone)]
pub struct RerankClient {
    endpoint: JsonEndpoint,
    model: Option<String>,
}

#[derive(Serialize)]
struct Request<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    query: &'a str,
    documents: &'a [String],
    top_n: usize,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Response {
    Results { results: Vec<Item> },
    Bare(Vec<Item>),
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    #[serde(alias = "score")]
    relevance_score: f32,
}

impl RerankClient {
    /// Builds the client once; fails on a base URL that is not http(s).
    pub fn new(config: RerankConfig) -> Result<Self, RerankError> {
        let endpoint = JsonEndpoint::new(&config.base_url, "rerank", config.api_key)
            .map_err(RerankError::Config)?;
        Ok(Self {
            endpoint,
            model: config.model,
        })
    }

    /// The URL rerank requests are posted to.
    #[cfg(test)]
    pub(crate) fn endpoint(&self) -> &str {
        self.endpoint.url()
    }
}

#[async_trait]
impl Reranker for RerankClient {
    async fn rerank(
        &self,
        query: &str,
        documents: &[String],
        top_n: usize,
        timeout: Duration,
    ) -> Result<Vec<Ranked>, RerankError> {
        let body = Request {
            model: self.model.as_deref(),
            query,
            documents,
            top_n,
        };
        let text = self.endpoint.post(&body, timeout).await?;
        let parsed: Response =
            serde_json::from_str(&text).map_err(|e| RerankError::InvalidResponse(e.to_string()))?;
        let items = match parsed {
            Response::Results { results } => results,
            Response::Bare(items) => items,
        };
        let pairs = items.into_iter().map(|i| (i.index, i.relevance_score));
        ranked(pairs, documents.len(), top_n)
    }
}

/// The results (index, score) checked against the inputs, best first, at most `top_n`.
pub(super) fn ranked(
    items: impl IntoIterator<Item = (usize, f32)>,
    inputs: usize,
    top_n: usize,
) -> Result<Vec<Ranked>, RerankError> {
    let invalid = |m: String| RerankError::InvalidResponse(m);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (index, score) in items {
        if index >= inputs {
            return Err(invalid(format!(
                "index {index} out of range for {inputs} documents"
            )));
        }
        if !seen.insert(index) {
            return Err(invalid(format!("index {index} given twice")));
        }
        if !score.is_finite() {
            return Err(invalid("a relevance score is not a finite number".into()));
        }
        out.push(Ranked { index, score });
    }
    if out.is_empty() && inputs > 0 {
        return Err(invalid("no results".into()));
    }
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
    out.truncate(top_n);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(index: usize, relevance_score: f32) -> (usize, f32) {
        (index, relevance_score)
    }

    #[test]
    fn results_are_checked_sorted_and_cut() {
        let out = ranked(vec![item(0, 0.1), item(2, 0.9), item(1, 0.5)], 3, 2).unwrap();
        assert_eq!(
            out.iter().map(|r| r.index).collect::<Vec<_>>(),
            [2, 1],
            "best first, top_n kept"
        );
        assert!(ranked(vec![item(3, 0.1)], 3, 3).is_err());
        assert!(ranked(vec![item(0, 0.1), item(0, 0.2)], 3, 3).is_err());
        assert!(ranked(vec![item(0, f32::NAN)], 3, 3).is_err());
        assert!(ranked(vec![], 3, 3).is_err());
    }

    #[test]
    fn cohere_and_tei_answers_both_parse() {
        let cohere: Response =
            serde_json::from_str(r#"{"id":"x","results":[{"index":1,"relevance_score":0.7}]}"#)
                .unwrap();
        assert!(matches!(cohere, Response::Results { results } if results[0].index == 1));
        let tei: Response = serde_json::from_str(r#"[{"index":0,"score":0.2}]"#).unwrap();
        assert!(matches!(tei, Response::Bare(items) if items[0].relevance_score == 0.2));
    }

    #[test]
    fn endpoint_is_base_url_plus_rerank() {
        let client = RerankClient::new(RerankConfig {
            base_url: "http://127.0.0.1:9/v1/".into(),
            model: None,
            api_key: None,
        })
        .unwrap();
        assert_eq!(client.endpoint(), "http://127.0.0.1:9/v1/rerank");
        assert!(RerankClient::new(RerankConfig {
            base_url: "ftp://x".into(),
            model: None,
            api_key: None,
        })
        .is_err());
    }
}
