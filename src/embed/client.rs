//! The OpenAI-compatible embeddings client: `POST {base_url}/embeddings` with
//! `{"model", "input": [...]}` and `Authorization: Bearer <key>` when a key is configured;
//! the answer `{"data": [{"index", "embedding"}], "usage": {"prompt_tokens"}}` is put back in
//! input order and checked (one vector per input, one length for all, finite numbers).
use super::embedder::{Embedder, Embeddings};
use super::error::EmbedError;
use crate::outbound::JsonEndpoint;
use crate::secrets::Secret;
use crate::usage::{estimate_tokens, Usage};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Settings of the embeddings client.
#[derive(Debug, Clone)]
pub struct EmbeddingsConfig {
    /// Base URL up to the version, e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    /// Model name, e.g. `text-embedding-3-small` or `all-minilm`.
    pub model: String,
    /// Bearer key; `None` sends no `Authorization` header.
    pub api_key: Option<Secret>,
}

/// OpenAI-compatible embeddings client. Build once; clones share the connection pool.
#[derive(Debug, Clone)]
pub struct EmbeddingsClient {
    endpoint: JsonEndpoint,
    model: String,
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    input: &'a [String],
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    embedding: Vec<f32>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
}

impl EmbeddingsClient {
    /// Builds the client once; fails on a base URL that is not http(s).
    pub fn new(config: EmbeddingsConfig) -> Result<Self, EmbedError> {
        let endpoint = JsonEndpoint::new(&config.base_url, "embeddings", config.api_key)
            .map_err(EmbedError::Config)?;
        Ok(Self {
            endpoint,
            model: config.model,
        })
    }

    /// The URL embeddings are posted to.
    pub fn endpoint(&self) -> &str {
        self.endpoint.url()
    }
}

#[async_trait]
impl Embedder for EmbeddingsClient {
    async fn embed(&self, inputs: &[String], timeout: Duration) -> Result<Embeddings, EmbedError> {
        let body = Request {
            model: &self.model,
            input: inputs,
        };
        let text = self.endpoint.post(&body, timeout).await?;
        let parsed: Response =
            serde_json::from_str(&text).map_err(|e| EmbedError::InvalidResponse(e.to_string()))?;
        let vectors = in_input_order(parsed.data, inputs.len())?;
        let reported = parsed.usage.and_then(|u| u.prompt_tokens);
        let usage = Usage {
            prompt_tokens: reported
                .unwrap_or_else(|| inputs.iter().map(|t| estimate_tokens(t)).sum()),
            estimated: reported.is_none(),
            model_calls: 1,
            ..Usage::default()
        };
        Ok(Embeddings { vectors, usage })
    }

    fn model(&self) -> &str {
        &self.model
    }
}

/// The vectors sorted by `index`, checked against the number of inputs.
fn in_input_order(data: Vec<Item>, inputs: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    let invalid = |m: String| EmbedError::InvalidResponse(m);
    if data.len() != inputs {
        return Err(invalid(format!(
            "{} vectors for {inputs} inputs",
            data.len()
        )));
    }
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; inputs];
    for item in data {
        let slot = slots
            .get_mut(item.index)
            .ok_or_else(|| invalid(format!("index {} out of range", item.index)))?;
        if slot.replace(item.embedding).is_some() {
            return Err(invalid(format!("index {} given twice", item.index)));
        }
    }
    let vectors: Vec<Vec<f32>> = slots.into_iter().map(Option::unwrap_or_default).collect();
    let dims = vectors.first().map_or(0, Vec::len);
    if dims == 0 || vectors.iter().any(|v| v.len() != dims) {
        return Err(invalid("vectors are empty or of different lengths".into()));
    }
    if vectors.iter().flatten().any(|x| !x.is_finite()) {
        return Err(invalid("a vector holds a non-finite number".into()));
    }
    Ok(vectors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(index: usize, embedding: Vec<f32>) -> Item {
        Item { index, embedding }
    }

    #[test]
    fn vectors_are_put_in_input_order_and_checked() {
        let data = vec![item(1, vec![2.0, 2.0]), item(0, vec![1.0, 1.0])];
        assert_eq!(
            in_input_order(data, 2).unwrap(),
            vec![vec![1.0, 1.0], vec![2.0, 2.0]]
        );
        let err = in_input_order(vec![item(0, vec![1.0])], 2).unwrap_err();
        assert!(err.to_string().contains("1 vectors for 2 inputs"), "{err}");
        let ragged = vec![item(0, vec![1.0]), item(1, vec![1.0, 2.0])];
        assert!(in_input_order(ragged, 2).is_err());
        let twice = vec![item(0, vec![1.0]), item(0, vec![1.0])];
        assert!(in_input_order(twice, 2).is_err());
        let nan = vec![item(0, vec![f32::NAN])];
        assert!(in_input_order(nan, 1).is_err());
    }

    #[test]
    fn endpoint_is_base_url_plus_embeddings() {
        let client = EmbeddingsClient::new(EmbeddingsConfig {
            base_url: "http://127.0.0.1:9/v1/".into(),
            model: "m".into(),
            api_key: None,
        })
        .unwrap();
        assert_eq!(client.endpoint(), "http://127.0.0.1:9/v1/embeddings");
        assert_eq!(client.model(), "m");
        let bad = EmbeddingsClient::new(EmbeddingsConfig {
            base_url: "ftp://x".into(),
            model: "m".into(),
            api_key: None,
        });
        assert!(bad.is_err());
    }
}
