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
//! | `published` | bundles on S3: the pointer and the key layout |
//!
//! The BM25 schema (`search`'s `bm25::schema`), and the metadata table, counts, source formats,
//! skipped files and the embedding model ([`crate::knowledge`]) are the shared vocabulary,
//! recorded here as they are.

mod layout;
mod manifest;
mod published;

pub use layout::MANIFEST;
pub(crate) use layout::{INDEX_DIR, METADATA_FILE, VECTORS_FILE};
pub(crate) use manifest::{now_rfc3339, ANALYZER, FORMAT};
pub use manifest::{BundleFile, Manifest, FORMAT_VERSION};
pub(crate) use published::{bundle_key, POINTER, POINTER_FORMAT};
pub use published::{Pointer, Published};
