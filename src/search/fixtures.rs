//! Unit-test fixtures shared by the knowledge modules (search and ingest): a document of any
//! kind, and options that search every kind.

use super::document::{DocKind, Document};
use super::options::RetrievalOptions;

/// Document `id` at `kb://{id}`, unscored.
pub(crate) fn doc(id: &str, title: &str, content: &str, kind: DocKind) -> Document {
    Document {
        id: id.into(),
        title: title.into(),
        url: format!("kb://{id}"),
        content: content.into(),
        score: 0.0,
        kind,
        clear_match: false,
        from_graph: false,
        vector_rank: None,
    }
}

/// Every kind searched, at most `limit` results.
pub(crate) fn all(limit: usize) -> RetrievalOptions {
    RetrievalOptions {
        limit,
        nodes: true,
        edges: true,
        episodes: true,
        communities: true,
        filter: None,
    }
}
