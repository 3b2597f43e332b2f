//! The names inside a knowledge-base bundle folder, for the writer (`bundle`) and for every
//! reader that must recognise or open one (`sources` skips bundle folders, `kb` opens them,
//! `s3` ships them).

/// File name of the manifest, at the top of a bundle.
pub const MANIFEST: &str = "kb-manifest.json";
/// Folder of the tantivy index inside a bundle.
pub(crate) const INDEX_DIR: &str = "index";
/// File of the passages' vectors inside a bundle.
pub(crate) const VECTORS_FILE: &str = "vectors.bin";
