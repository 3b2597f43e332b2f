//! Embeddings: the [`Embedder`] trait, an OpenAI-compatible client ([`EmbeddingsClient`],
//! `POST {EMBEDDINGS_BASE_URL}/embeddings`), which OpenAI, Ollama, vLLM and TEI all serve, and
//! Amazon Bedrock's Titan Text Embeddings v2 ([`BedrockEmbeddings`], `InvokeModel`).
//!
//! One call per batch, one attempt per call: the caller owns retries (the engine's policy
//! during a run, a bounded loop at ingest). Every call reports its [`Usage`](crate::usage::Usage) as one model call,
//! with the server's `usage.prompt_tokens` or an estimate marked as such.

mod bedrock;
mod client;
mod embedder;
mod error;

pub(crate) use bedrock::BedrockEmbeddings;
pub use client::{EmbeddingsClient, EmbeddingsConfig};
pub use embedder::{Embedder, Embeddings};
pub use error::EmbedError;
