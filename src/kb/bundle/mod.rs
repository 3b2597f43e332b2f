//! The bundle store: a knowledge base in a folder (`KB_PATH`, `ingest --out DIR`) or published
//! to S3 (`KB_URI=s3://...`), both sides of it.
//!
//! | module | owns |
//! |---|---|
//! | [`format`](mod@format) | what a bundle folder holds: manifest, layout, stats, the S3 pointer |
//! | `knowledge_base` | [`KnowledgeBase`]: one opened bundle, checked against its manifest |
//! | `search` | BM25, hybrid and graph search over it, each passage with how it ranked |
//! | `open` | opening a bundle from a folder or from files in memory |
//! | `in_memory` | a knowledge base indexed in memory from documents (ingest's folder, the sample, tests) |
//! | `write` | [`BundleFolder`]: a bundle folder written from a corpus in staging, moved into place |
//! | `build_index`, `hash` | writing: the BM25 index built, the content hash (a bundle's version) |
//! | [`s3`] | bundles on S3: reading (pointer, manifests, list, fetch) and publishing ([`BundleStore::publish`](s3::BundleStore::publish) and `point`: bundles to S3 behind the pointer) |
//! | `live` | the knowledge a function serves from S3: loaded at start, refreshed between runs |

pub(crate) mod build_index;
pub mod format;
pub(crate) mod hash;
mod in_memory;
mod knowledge_base;
mod live;
pub(crate) mod open;
#[cfg(test)]
mod properties;
pub mod s3;
mod search;
mod write;

pub(crate) use in_memory::InMemory;
pub use knowledge_base::KnowledgeBase;
pub use live::{check_compatible, LiveKnowledge, LoadOptions, RefreshOutcome};
pub(crate) use live::{check_embedding, check_vectors};
pub(crate) use write::{holds_bundle, remove_dir_if_exists, BundleFolder, BundleVectors};
