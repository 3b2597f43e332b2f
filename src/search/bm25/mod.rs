//! The BM25 side of the knowledge base, read only: the index (opened memory-mapped or from bytes
//! in memory, or just built by ingest), its queries, the collector that keeps a filter's allowed
//! documents, and the read-only directories. The schema and analyzer are the bundle format's
//! (`search::format::schema`); building an index is ingest's.

mod directory;
mod index;
mod only_allowed;

pub(crate) use index::{Hit, SearchIndex};
