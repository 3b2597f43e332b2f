//! The BM25 side of the knowledge base: the tantivy schema and analyzer, the index (built in
//! memory or into a folder, opened memory-mapped or from bytes in memory) and its read-only
//! directories.

mod allowed;
mod directory;
mod index;
mod schema;

pub(crate) use index::{Hit, SearchIndex};
