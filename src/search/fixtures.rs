//! Unit-test fixtures shared by the knowledge modules (search and ingest): a document of any
//! kind, and options that search every kind.

use super::options::RetrievalOptions;
use crate::knowledge::{DocKind, Document};

/// Document `id` at `kb://{id}`, unscored.
pub(crate) fn doc(id: &str, title: &str, content: &str, kind: DocKind) -> Document {
    Document {
        score: 0.0,
        kind,
        ..Document::passage(id, title, format!("kb://{id}"), content)
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
