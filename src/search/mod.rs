//! Query mechanics: how passages are ranked for a question, whichever store holds them, and
//! web search. The stores themselves (bundles, PostgreSQL, Bedrock knowledge bases) are
//! [`crate::kb`]'s; this room knows none of them.
//!
//! | module | owns |
//! |---|---|
//! | `document`, `options` | what a search returns ([`Document`], [`DocKind`]) and what it is asked ([`RetrievalOptions`], [`RetrievalMode`]) |
//! | `bm25` | the tantivy index: its schema and analyzer, queries, the filter collector, read-only directories |
//! | `hybrid` | quantized passage vectors, their flat scan, reciprocal rank fusion, the clear lead |
//! | `knowledge_graph` | the entity graph: one-hop relations and communities of matched entities |
//! | `filter`, `meta_table`, `allowed` | metadata filters, the metadata of a corpus, and the allowed set they make |
//! | `cap` | at most N passages per source document in a ranking |
//! | `ranking` | why a passage ranked where it did ([`Ranking`]: each ranking's place, the weights, the keep rule) |
//! | [`rerank`] | the [`Reranker`] trait, its Cohere/Jina/TEI-compatible client and Bedrock's `Rerank` |
//! | `web` | the [`WebSearch`] trait and the Tavily-compatible client |
//! | `source_format`, `skipped_file` | a source document's format and a skipped file's reason, as errors and manifests name them |
//! | `error` | [`RetrievalError`], shared with kb and ingest |

pub(crate) mod allowed;
pub(crate) mod bm25;
pub(crate) mod cap;
pub(crate) mod document;
mod error;
pub(crate) mod filter;
#[cfg(test)]
pub(crate) mod fixtures;
pub(crate) mod hybrid;
pub(crate) mod knowledge_graph;
pub(crate) mod meta_table;
pub(crate) mod options;
pub(crate) mod ranking;
pub(crate) mod rerank;
pub(crate) mod skipped_file;
pub(crate) mod source_format;
mod web;

pub use document::{DocKind, Document};
pub use error::RetrievalError;
pub use filter::{Filter, FilterError};
pub use options::{RetrievalMode, RetrievalOptions};
pub use ranking::{KeptBy, Place, Ranking, Weights};
pub use rerank::{BedrockReranker, Ranked, RerankClient, RerankConfig, RerankError, Reranker};
pub use skipped_file::{SkipReason, SkippedFile};
pub use source_format::{DocumentInfo, Format};
pub use web::{TavilyClient, TavilyConfig, WebSearch};
