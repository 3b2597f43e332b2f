//! The query side of knowledge: the [`Retriever`] seam and the knowledge base behind it
//! (opened from what ingest built, searched per request), and the [`WebSearch`] seam with a
//! Tavily-compatible client. Search never reads or writes a source document.
//!
//! | module | owns |
//! |---|---|
//! | `document`, `options` | what a search returns ([`Document`], [`DocKind`]) and what it is asked ([`RetrievalOptions`], [`RetrievalMode`]) |
//! | `retriever` | the [`Retriever`] trait |
//! | `kb` | the [`KnowledgeBase`]: BM25, hybrid and graph search over one opened index |
//! | [`format`](mod@format) | the bundle format ingest writes and search reads (manifest, layout, schema, metadata, stats) |
//! | `open` | opening a bundle from a folder or from files in memory |
//! | `bm25` | the tantivy index, read only: queries, the filter collector, read-only directories |
//! | `hybrid` | quantized passage vectors, their flat scan, reciprocal rank fusion |
//! | `knowledge_graph` | the entity graph: one-hop relations and communities of matched entities |
//! | `filter`, `allowed` | metadata filters and the allowed set they make of a corpus |
//! | `cap` | at most N passages per source document in a ranking |
//! | `bedrock_kb` | an Amazon Bedrock knowledge base as the store (`KB_URI=bedrock-kb://ID`): `Retrieve`, our filters as Bedrock's |
//! | [`rerank`] | the [`Reranker`] trait, its Cohere/Jina/TEI-compatible client and Bedrock's `Rerank` |
//! | [`s3`] | reading published bundles: pointer, manifests, list, fetch |
//! | `live` | the knowledge a function serves from S3: loaded at start, refreshed between runs |
//! | `web` | the [`WebSearch`] trait and the Tavily-compatible client |
//! | `error` | [`RetrievalError`], shared with ingest |

mod allowed;
mod bedrock_kb;
pub(crate) mod bm25;
mod cap;
mod document;
mod error;
mod filter;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod format;
pub(crate) mod hybrid;
mod kb;
mod knowledge_graph;
mod live;
pub(crate) mod open;
mod options;
pub(crate) mod postgres;
pub(crate) mod rerank;
mod retriever;
pub mod s3;
mod web;

pub use bedrock_kb::BedrockKnowledgeBase;
pub use document::{DocKind, Document};
pub use error::RetrievalError;
pub use filter::{Filter, FilterError};
pub use kb::KnowledgeBase;
pub use live::{check_compatible, LiveKnowledge, LoadOptions, RefreshOutcome};
pub(crate) use live::{check_embedding, check_vectors};
pub use options::{RetrievalMode, RetrievalOptions};
pub use postgres::PgKnowledge;
pub use rerank::{BedrockReranker, Ranked, RerankClient, RerankConfig, RerankError, Reranker};
pub use retriever::Retriever;
pub use web::{TavilyClient, TavilyConfig, WebSearch};
