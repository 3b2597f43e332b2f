//! Writing a bundle folder (`ingest --out DIR`, and sync before it publishes): the target
//! checked, everything built in a staging folder beside it (the BM25 index, the vectors, the
//! metadata table), the manifest written last, then the finished folder renamed into place.
//! Ingest hands it a [`Corpus`] and the passages' vectors; it knows no source format.
use super::build_index::build_in_dir;
use super::format::{
    now_rfc3339, BundleFile, Manifest, ANALYZER, FORMAT, FORMAT_VERSION, INDEX_DIR, MANIFEST,
    METADATA_FILE, VECTORS_FILE,
};
use super::hash::{content_hash, with_metadata};
use crate::knowledge::{Corpus, EmbeddingInfo, Progress};
use crate::search::RetrievalError;
use crate::search::Vectors;
use serde::Deserialize;
use std::fs;
use std::path::{Path, PathBuf};

/// A bundle folder to be written: its target, checked, and the staging folder beside it
/// (`.NAME.partial`, where the bundle is built and an interrupted ingest's vectors are kept).
#[derive(Debug, Clone)]
pub(crate) struct BundleFolder {
    target: PathBuf,
    staging: PathBuf,
}

/// The passages' vectors, in index order, and the model that made them.
pub(crate) struct BundleVectors<'a> {
    pub vectors: &'a [Vec<f32>],
    pub info: &'a EmbeddingInfo,
}

impl BundleFolder {
    /// `target`, checked: missing, empty, or a previous bundle (which is replaced); never
    /// the folder `source` (canonical) or a folder above it.
    pub(crate) fn new(target: &Path, source: &Path) -> Result<Self, RetrievalError> {
        check_target(source, target)?;
        let name = target
            .file_name()
            .ok_or_else(|| RetrievalError::Target {
                path: target.to_path_buf(),
                reason: "it has no folder name".into(),
            })?
            .to_string_lossy();
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok(Self {
            staging: parent.join(format!(".{name}.partial")),
            target: target.to_path_buf(),
        })
    }

    /// A bundle written inside a fresh work folder of its own (sync's build, published from
    /// there): `work/bundle`, staged in `work/.bundle.partial`.
    pub(crate) fn in_work_folder(work: &Path) -> Self {
        Self {
            target: work.join("bundle"),
            staging: work.join(".bundle.partial"),
        }
    }

    /// Where the bundle goes.
    pub(crate) fn target(&self) -> &Path {
        &self.target
    }

    /// The staging folder: the bundle being built, and resumable embeddings.
    pub(crate) fn staging(&self) -> &Path {
        &self.staging
    }

    /// Writes the bundle of `corpus` (with `vectors` when given, and `description`) and moves
    /// it into place; returns its manifest.
    pub(crate) fn write(
        &self,
        corpus: &Corpus,
        vectors: Option<BundleVectors<'_>>,
        description: Option<String>,
        progress: &dyn Progress,
    ) -> Result<Manifest, RetrievalError> {
        fs::create_dir_all(&self.staging).map_err(|e| RetrievalError::io(&self.staging, e))?;
        let build = self.staging.join("bundle");
        remove_dir_if_exists(&build)?;
        let index_dir = build.join(INDEX_DIR);
        fs::create_dir_all(&index_dir).map_err(|e| RetrievalError::io(&index_dir, e))?;

        let docs = &corpus.docs;
        progress.stage("indexing", docs.len() as u64);
        drop(build_in_dir(&index_dir, docs)?);
        progress.advance(docs.len() as u64);
        progress.finish();

        let embedding = vectors.as_ref().map(|v| v.info.clone());
        if let Some(embedded) = &vectors {
            let bytes = Vectors::encode(embedded.vectors, embedded.info.dimensions);
            write(&build.join(VECTORS_FILE), &bytes)?;
        }
        let meta = &corpus.meta;
        if !meta.is_empty() {
            let json = serde_json::to_vec(meta).expect("metadata serializes");
            write(&build.join(METADATA_FILE), &json)?;
        }
        let manifest = Manifest {
            format: FORMAT.into(),
            format_version: FORMAT_VERSION,
            content_hash: with_metadata(content_hash(docs, embedding.as_ref()), meta),
            created_at: now_rfc3339(),
            counts: corpus.stats,
            embedding,
            analyzer: ANALYZER.into(),
            files: describe_files(&build)?,
            metadata_keys: meta.keys(),
            documents: corpus.documents.clone(),
            skipped: corpus.skipped.clone(),
            description,
        };
        let json = serde_json::to_vec_pretty(&manifest).expect("manifest serializes");
        write(&build.join(MANIFEST), &json)?;

        // Into place: the old bundle aside, the new one in, then the staging folder away.
        if self.target.exists() {
            let old = self.staging.join("old");
            remove_dir_if_exists(&old)?;
            fs::rename(&self.target, &old).map_err(|e| RetrievalError::io(&self.target, e))?;
        }
        fs::rename(&build, &self.target).map_err(|e| RetrievalError::io(&self.target, e))?;
        remove_dir_if_exists(&self.staging)?;
        Ok(manifest)
    }
}

/// Whether `dir` holds a bundle: a folder with a manifest, read as is rather than as sources.
pub(crate) fn holds_bundle(dir: &Path) -> bool {
    dir.join(MANIFEST).is_file()
}

/// `target` may be missing, empty, or a previous bundle; never the source or above it.
fn check_target(source: &Path, target: &Path) -> Result<(), RetrievalError> {
    let refuse = |reason: &str| RetrievalError::Target {
        path: target.to_path_buf(),
        reason: reason.into(),
    };
    if !target.exists() {
        return Ok(());
    }
    if !target.is_dir() {
        return Err(refuse("it is not a folder"));
    }
    let resolved = target
        .canonicalize()
        .map_err(|e| RetrievalError::io(target, e))?;
    if resolved == source || source.starts_with(&resolved) {
        return Err(refuse("it contains the source folder"));
    }
    let mut entries = fs::read_dir(target).map_err(|e| RetrievalError::io(target, e))?;
    if entries.next().is_none() || is_bundle(target) {
        return Ok(());
    }
    Err(refuse(
        "it is not empty and is not a previous ingest output (no kb-manifest.json)",
    ))
}

/// Whether `dir` holds a manifest of this format, of any version (so old bundles can be
/// replaced).
fn is_bundle(dir: &Path) -> bool {
    #[derive(Deserialize)]
    struct Format {
        format: String,
    }
    fs::read(dir.join(MANIFEST))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Format>(&bytes).ok())
        .is_some_and(|m| m.format == FORMAT)
}

/// Every file under `dir` (sorted, `/`-separated relative paths) with size and SHA-256.
fn describe_files(dir: &Path) -> Result<Vec<BundleFile>, RetrievalError> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in fs::read_dir(&folder).map_err(|e| RetrievalError::io(&folder, e))? {
            let path = entry.map_err(|e| RetrievalError::io(&folder, e))?.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            // tantivy's lock files guard writers; readers of a finished bundle need none.
            if path.extension().is_some_and(|e| e == "lock") {
                fs::remove_file(&path).map_err(|e| RetrievalError::io(&path, e))?;
                continue;
            }
            let bytes = fs::read(&path).map_err(|e| RetrievalError::io(&path, e))?;
            let rel = path.strip_prefix(dir).unwrap_or(&path);
            let rel: Vec<_> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect();
            out.push(BundleFile::describe(&rel.join("/"), &bytes));
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), RetrievalError> {
    fs::write(path, bytes).map_err(|e| RetrievalError::io(path, e))
}

/// Removes `dir` and what it holds; nothing when it is missing.
pub(crate) fn remove_dir_if_exists(dir: &Path) -> Result<(), RetrievalError> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(RetrievalError::io(dir, e)),
        _ => Ok(()),
    }
}
