//! The bundle format: everything a bundle folder holds, written by ingest through
//! [`crate::kb::bundle`] and opened by it.
//!
//! A bundle is a folder:
//! - `kb-manifest.json`: [`Manifest`] (format version, content hash, counts, build time, the
//!   embedding model and dimensions or none, the documents and skipped files, and every file
//!   with its size and SHA-256);
//! - `index/`: the tantivy BM25 index (`schema`), one segment, documents in corpus order;
//! - `vectors.bin`: with embeddings, one int8 vector per passage in index order;
//! - `metadata.json`: with metadata, the spans of `metadata`.
//!
//! | module | owns |
//! |---|---|
//! | `layout` | the file names inside a bundle folder |
//! | `manifest` | the manifest, its checks, file digests |
//! | `stats` | what a knowledge base holds, counted |
//!
//! The BM25 schema (`search::bm25::schema`), the metadata table (`search::meta_table`), source
//! formats and skipped files (`search::source_format`, `search::skipped_file`) are search's
//! vocabulary, recorded here as they are.
//! | `published` | bundles on S3: the pointer and the key layout |

mod layout;
mod manifest;
mod published;
mod stats;

pub use crate::search::skipped_file::{SkipReason, SkippedFile};
pub use crate::search::source_format::{DocumentInfo, Format};
pub use layout::MANIFEST;
pub(crate) use layout::{INDEX_DIR, METADATA_FILE, VECTORS_FILE};
pub(crate) use manifest::{hex, hex_digest, now_rfc3339, ANALYZER, FORMAT};
pub use manifest::{BundleFile, EmbeddingInfo, Manifest, FORMAT_VERSION};
pub(crate) use published::{bundle_key, POINTER, POINTER_FORMAT};
pub use published::{Pointer, Published};
pub use stats::KbStats;
