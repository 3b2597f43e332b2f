//! Incremental sync of a source (a folder or `s3://BUCKET/PREFIX`) to a knowledge base
//! published on S3 (`bounded-rag kb sync`, and the sync function): only added, modified and
//! deleted files are read, only passages whose text changed are embedded, and one version is
//! published (or none).
//!
//! | module | owns |
//! |---|---|
//! | `source` | listing a source without reading it; fetching one file |
//! | `reader` | one file read under a panic guard, a time limit and a text bound |
//! | `state` | what the last sync knew (per file: fingerprint, hash, reader output or typed failure) |
//! | `embedding_cache` | the embedding cache beside the knowledge base |
//! | `build` | the state to a bundle, written as ingest writes it, and published |
//! | `run` | [`sync`]: compare, read, build, publish, remember |
//! | `into_store` | `kb sync SOURCE postgres://...`: the same comparison, the changed documents written into PostgreSQL |
//! | `summary` | [`SyncSummary`]: the job statistics |
//! | `job` | the sync function's work: changes from S3 events, the debounced single-flight publish, full-sync fan-out |
//! | `objects` | the sync's objects under `PREFIX/.sync/` |
mod build;
mod embedding_cache;
mod into_store;
pub mod job;
mod objects;
mod reader;
mod run;
mod source;
mod state;
mod summary;

pub(crate) use into_store::sync_into_store;
pub use run::sync;
pub use source::SyncSource;
pub use state::{DocStatus, FailReason};
pub use summary::{FailedFile, SyncSummary};
