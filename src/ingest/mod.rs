//! Documents in: reading a folder of sources (formats, cleaning, chunking into passages, skip
//! reasons), embedding the passages, and writing them through a knowledge store of
//! [`crate::kb`]: a bundle folder, PostgreSQL, or a knowledge base indexed in memory. Ingest
//! never answers a question.
//!
//! | module | owns |
//! |---|---|
//! | `sources` | reading a folder: Markdown, text, HTML, reStructuredText, Word, PDF, CSV/TSV, the entity / relation / community JSONL, metadata sidecars |
//! | `plan` | an ingest's sources read and checked, its target checked, its staging folder named |
//! | `embedding` | every passage embedded in batches, resumable from the staging folder |
//! | `pipeline` | [`ingest`] and [`ingest_dir`]: sources to a bundle folder, handed to its writer ([`crate::kb::BundleFolder`]) |
//! | `into_store` | [`ingest_into_store`]: sources into PostgreSQL (`--out postgres://`, `rds-data://`), through its [`Mirror`](crate::kb::Mirror) |
//! | `options`, `summary` | how an ingest runs ([`IngestOptions`]) and what it wrote ([`IngestSummary`]) |
//! | `describe` | what a knowledge base covers, derived from its titles and headings for the router when `--description` is not given |
//! | `in_memory` | [`sample_kb`] and [`load_kb`]: the sample or a `KB_PATH` folder indexed in memory |
//! | `error` | [`IngestError`]: ingest's own failures, and the store's when the writer fails |
//! | `sync` | `kb sync` and the sync function: incremental sync of a source, the embedding cache |

mod describe;
pub(crate) mod embedding;
mod error;
mod in_memory;
mod into_store;
mod options;
mod pipeline;
pub(crate) mod plan;
mod sources;
mod summary;
pub mod sync;

pub use error::IngestError;
pub use in_memory::{load_kb, sample_kb};
pub(crate) use into_store::ingest_into_store;
pub use into_store::StoreIngestSummary;
pub use options::IngestOptions;
pub use pipeline::{ingest, ingest_dir};
pub(crate) use sources::enable_parsers;
pub use summary::IngestSummary;
pub(crate) use sync::job::{
    reason_of, summary_of, DocOutcome, JobError, Ledger, SyncJob, SyncMessage, SyncQueue,
    SyncSettings,
};
pub(crate) use sync::{sync, sync_into_store, SyncSource};
