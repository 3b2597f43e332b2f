//! Opening a bundle written by ingest: from a folder (the index memory-mapped, the vectors
//! read) or from files already in memory (a bundle downloaded from S3). Either way the manifest
//! is checked first; the knowledge base assembled from the parts checks every count against
//! what was opened.
use super::format::{Manifest, INDEX_DIR, MANIFEST, METADATA_FILE, VECTORS_FILE};
use crate::knowledge::MetaTable;
use crate::search::RetrievalError;
use crate::search::SearchIndex;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use tantivy::directory::OwnedBytes;

/// The parts of an opened bundle, from which the knowledge base is assembled.
pub(crate) struct Opened {
    /// The BM25 index.
    pub index: SearchIndex,
    /// The vectors file's bytes, when the bundle has one.
    pub vectors: Option<OwnedBytes>,
    /// Per-document metadata (empty for bundles without `metadata.json`).
    pub meta: MetaTable,
    /// The manifest.
    pub manifest: Manifest,
    /// The folder or URL the bundle came from.
    pub(crate) origin: PathBuf,
}

/// Opens the bundle in `dir`. Files are checked by size (a copy cut short is caught); S3
/// downloads are also checked by SHA-256 as they arrive.
pub(crate) fn open_dir(dir: &Path) -> Result<Opened, RetrievalError> {
    let path = dir.join(MANIFEST);
    let bytes = fs::read(&path).map_err(|e| RetrievalError::io(&path, e))?;
    let manifest = Manifest::parse(&bytes, &path)?;
    for file in &manifest.files {
        let path = dir.join(&file.path);
        let size = fs::metadata(&path).map(|m| m.len()).ok();
        if size != Some(file.bytes) {
            return Err(RetrievalError::Invalid {
                path,
                message: "missing or of the wrong size: the bundle is incomplete; re-run ingest"
                    .into(),
            });
        }
    }
    let index = SearchIndex::open(&dir.join(INDEX_DIR))?;
    let vectors = match &manifest.embedding {
        Some(_) => {
            let path = dir.join(VECTORS_FILE);
            let bytes = fs::read(&path).map_err(|e| RetrievalError::io(&path, e))?;
            Some(OwnedBytes::new(bytes))
        }
        None => None,
    };
    let meta = match manifest.file(METADATA_FILE) {
        Some(_) => {
            let path = dir.join(METADATA_FILE);
            let bytes = fs::read(&path).map_err(|e| RetrievalError::io(&path, e))?;
            Some(OwnedBytes::new(bytes))
        }
        None => None,
    };
    let meta = read_meta(meta, dir)?;
    Ok(Opened {
        index,
        vectors,
        meta,
        manifest,
        origin: dir.to_path_buf(),
    })
}

/// Opens a bundle from its files held in memory (paths as in the manifest, already checked).
pub(crate) fn open_in_memory(
    manifest: Manifest,
    mut files: HashMap<String, OwnedBytes>,
    origin: &str,
) -> Result<Opened, RetrievalError> {
    let prefix = format!("{INDEX_DIR}/");
    let vectors = files.remove(VECTORS_FILE);
    let meta = read_meta(files.remove(METADATA_FILE), Path::new(origin))?;
    let index_files: HashMap<PathBuf, OwnedBytes> = files
        .into_iter()
        .filter_map(|(path, bytes)| Some((PathBuf::from(path.strip_prefix(&prefix)?), bytes)))
        .collect();
    let index = SearchIndex::open_in_memory(index_files, Path::new(origin))?;
    Ok(Opened {
        index,
        vectors,
        meta,
        manifest,
        origin: PathBuf::from(origin),
    })
}

/// The bundle's metadata; none in bundles without `metadata.json` (older ones included).
fn read_meta(bytes: Option<OwnedBytes>, origin: &Path) -> Result<MetaTable, RetrievalError> {
    match bytes {
        None => Ok(MetaTable::default()),
        Some(bytes) => {
            MetaTable::from_json(bytes.as_slice()).map_err(|message| RetrievalError::Invalid {
                path: origin.join(METADATA_FILE),
                message,
            })
        }
    }
}
