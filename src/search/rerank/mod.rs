//! Reranking: the [`Reranker`] trait, a Cohere/Jina/TEI-compatible client ([`RerankClient`],
//! `POST {RERANK_BASE_URL}/rerank` with `{query, documents, top_n}`) and Amazon Bedrock's
//! `Rerank` ([`BedrockReranker`], `RERANK_PROVIDER=bedrock`).
//!
//! One call per retrieval, one attempt per call: the workflow's node policy retries transient
//! failures (timeouts, connection errors, 408, 429, 5xx) inside the run's budget and never a
//! 4xx. Every call that answers counts as one model call, its tokens estimated.

mod bedrock;
mod client;
mod error;
mod reranker;

pub use bedrock::BedrockReranker;
pub use client::{RerankClient, RerankConfig};
pub use error::RerankError;
pub use reranker::{Ranked, Reranker};
