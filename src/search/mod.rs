//! Query mechanics: how passages are ranked for a question, whichever store holds them, and
//! web search. The stores themselves (bundles, PostgreSQL, Bedrock knowledge bases) are
//! [`crate::kb`]'s; this room knows none of them.
//!
//! | module | owns |
//! |---|---|
//! | `options` | what a search is asked ([`RetrievalOptions`], [`RetrievalMode`]); what it returns is [`crate::knowledge`]'s [`Document`](crate::knowledge::Document) |
//! | `bm25` | the tantivy index: its schema and analyzer, queries, the filter collector, read-only directories |
//! | `hybrid` | quantized passage vectors, their flat scan, reciprocal rank fusion, the clear lead |
//! | `knowledge_graph` | the entity graph: one-hop relations and communities of matched entities |
//! | `filter`, `allowed` | metadata filters, and the allowed set they make from a corpus's [`MetaTable`](crate::knowledge::MetaTable) |
//! | `cap` | at most N passages per source document in a ranking |
//! | `ranking` | why a passage ranked where it did ([`Ranking`]: each ranking's place, the weights, the keep rule) |
//! | [`rerank`] | the [`Reranker`] trait, its Cohere/Jina/TEI-compatible client and Bedrock's `Rerank` |
//! | `web`, `web_error` | the [`WebSearch`] trait, the Tavily-compatible client, and [`WebSearchError`] |
//! | `error` | [`RetrievalError`]: what retrieval and the stores raise (kb's too; ingest wraps it in its own) |

pub(crate) mod allowed;
pub(crate) mod bm25;
pub(crate) mod cap;
mod error;
pub(crate) mod filter;
#[cfg(test)]
pub(crate) mod fixtures;
pub(crate) mod hybrid;
pub(crate) mod knowledge_graph;
pub(crate) mod options;
pub(crate) mod ranking;
pub(crate) mod rerank;
mod web;
mod web_error;

pub(crate) use allowed::Allowed;
pub(crate) use bm25::schema::{analyzer, schema, to_indexed, TOKENIZER};
pub(crate) use bm25::{Hit, SearchIndex};
pub(crate) use cap::{per_source, source_key};
pub use error::RetrievalError;
pub(crate) use filter::day;
pub use filter::{Filter, FilterError};
pub(crate) use hybrid::{
    clear_lead, fuse, near_sources, rank_of, CommonDirection, Fusion, Vectors,
};
pub(crate) use knowledge_graph::{
    strong_by_rank, strong_by_score, strong_count, KnowledgeGraph, Merged, SEEDS,
};
pub use options::{RetrievalMode, RetrievalOptions};
pub use ranking::{KeptBy, Place, Ranking, Weights};
pub use rerank::{BedrockReranker, Ranked, RerankClient, RerankConfig, RerankError, Reranker};
pub use web::{TavilyClient, TavilyConfig, WebSearch};
pub use web_error::WebSearchError;
