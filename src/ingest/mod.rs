//! Documents in: reading a folder of sources (formats, cleaning, chunking into passages, skip
//! reasons), embedding the passages, building a bundle (BM25 index, vectors, metadata, manifest)
//! and publishing it to S3; and building a knowledge base in memory from sources for search to
//! open. Ingest never answers a question; it writes what `search` reads (the bundle format,
//! `search::format`).
//!
//! | module | owns |
//! |---|---|
//! | `sources` | reading a folder: Markdown, text, HTML, reStructuredText, Word, PDF, CSV/TSV, the entity / relation / community JSONL, metadata sidecars |
//! | `bundle` | writing a bundle: plan, embedding (resumable), BM25 index build, content hash, write |
//! | `pipeline` | [`ingest`] and [`ingest_dir`]: sources to a bundle folder |
//! | `into_store` | [`ingest_into_store`]: sources into PostgreSQL (`--out postgres://`, `rds-data://`) |
//! | `options`, `summary` | how an ingest runs ([`IngestOptions`], [`Progress`]) and what it wrote ([`IngestSummary`]) |
//! | `describe` | what a knowledge base covers, derived from its titles and headings for the router when `--description` is not given |
//! | `in_memory` | `KnowledgeBase::embedded`, `load` and `from_documents`: sources indexed in memory |
//! | `publish` | `BundleStore::publish` and `point`: bundles to S3 behind the pointer |
//! | `sync` | `kb sync` and the sync function: incremental sync of a source, the embedding cache |

mod bundle;
mod describe;
mod in_memory;
mod into_store;
mod options;
mod pipeline;
mod publish;
mod sources;
mod summary;
pub mod sync;

pub(crate) use into_store::ingest_into_store;
pub use into_store::StoreIngestSummary;
pub use options::{IngestOptions, Progress};
pub use pipeline::{ingest, ingest_dir};
pub(crate) use sources::enable_parsers;
pub use summary::IngestSummary;
