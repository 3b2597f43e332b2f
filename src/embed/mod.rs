//! Embeddings: the [`Embedder`] trait, an OpenAI-compatible client ([`EmbeddingsClient`],
//! `POST {EMBEDDINGS_BASE_URL}/embeddings`), which OpenAI, Ollama, vLLM and TEI all serve, and
//! Amazon Bedrock's Titan Text Embeddings v2 ([`BedrockEmbeddings`], `InvokeModel`).
//!
//! One call per batch, one attempt per call: the caller owns retries (the engine's policy
//! during a run, a bounded loop at ingest). Every call reports its [`Usage`] as one model call,
//! with the server's `usage.prompt_tokens` or an estimate marked as such.

mod bedrock;
mod client;
mod error;

pub use bedrock::BedrockEmbeddings;
pub use client::{EmbeddingsClient, EmbeddingsConfig};
pub use error::EmbedError;

use crate::engine::Usage;
use async_trait::async_trait;
use std::time::Duration;

/// Vectors for a batch of texts, in input order, and what the call cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    /// One vector per input, all of the same length.
    pub vectors: Vec<Vec<f32>>,
    /// Tokens of the inputs; one model call.
    pub usage: Usage,
}

/// Turns texts into vectors. Built once; shared by every request.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// Vectors of `inputs` (at least one), within `timeout`.
    async fn embed(&self, inputs: &[String], timeout: Duration) -> Result<Embeddings, EmbedError>;

    /// The model name sent with each call and recorded in a bundle's manifest.
    fn model(&self) -> &str;

    /// The provider, recorded in a bundle's manifest: `openai` (an OpenAI-compatible server,
    /// the default) or `bedrock`.
    fn provider(&self) -> &'static str {
        "openai"
    }
}
