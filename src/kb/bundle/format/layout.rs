//! The names inside a knowledge-base bundle folder, for the writer (ingest) and for every
//! reader that must recognise or open one (ingest's folder walk skips bundle folders, search
//! opens them and ships them from S3).

/// File name of the manifest, at the top of a bundle.
pub const MANIFEST: &str = "kb-manifest.json";
/// Folder of the tantivy index inside a bundle.
pub(crate) const INDEX_DIR: &str = "index";
/// File of the passages' vectors inside a bundle.
pub(crate) const VECTORS_FILE: &str = "vectors.bin";
/// File of the metadata inside a bundle.
pub(crate) const METADATA_FILE: &str = "metadata.json";
