//! The BM25 side of search: the schema and analyzer every index is built with (`schema`), the
//! index read only (opened memory-mapped or from bytes in memory, or just built), its queries,
//! the collector that keeps a filter's allowed documents, and the read-only directories.
//! Building a bundle's index is [`crate::kb::bundle`]'s.

mod directory;
mod index;
mod only_allowed;
pub(crate) mod schema;

pub(crate) use index::{Hit, SearchIndex};
