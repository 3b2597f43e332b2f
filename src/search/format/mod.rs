//! The bundle format: everything ingest writes and search reads, and nothing else. Ingest and
//! search share only these types.
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
//! | `source_format`, `skip` | each document's format and each skipped file, as the manifest records them |
//! | `schema` | the BM25 schema and analyzer, and how a passage title splits into fields |
//! | `metadata` | the metadata spans of a corpus |
//! | `published` | bundles on S3: the pointer and the key layout |

mod layout;
mod manifest;
pub(crate) mod metadata;
mod published;
pub(crate) mod schema;
pub(crate) mod skip;
pub(crate) mod source_format;
mod stats;

pub use layout::MANIFEST;
pub(crate) use layout::{INDEX_DIR, METADATA_FILE, VECTORS_FILE};
pub(crate) use manifest::{hex, hex_digest, ANALYZER, FORMAT};
pub use manifest::{BundleFile, EmbeddingInfo, Manifest, FORMAT_VERSION};
pub(crate) use published::{bundle_key, POINTER, POINTER_FORMAT};
pub use published::{Pointer, Published};
pub use skip::{SkipReason, SkippedFile};
pub use source_format::{DocumentInfo, Format};
pub use stats::KbStats;
