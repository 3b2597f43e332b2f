//! The [`Embedder`] seam: texts in, vectors out, with what the call cost.
use super::error::EmbedError;
use crate::usage::Usage;
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

    /// The dimensions asked of the model, when the call fixes them (Bedrock Titan v2); `None`
    /// when the model decides. Part of the embedding cache's key.
    fn dimensions(&self) -> Option<usize> {
        None
    }
}
