//! Writing a bundle: validate the target, build everything in a staging folder beside it, write
//! the manifest last, then rename the finished folder into place.
use super::embedding::Embedded;
use super::manifest::{BundleFile, Manifest, ANALYZER, FORMAT, FORMAT_VERSION, MANIFEST};
use super::open::{INDEX_DIR, VECTORS_FILE};
use super::{content_hash, IngestSummary, Progress};
use crate::retrieval::bm25::SearchIndex;
use crate::retrieval::hybrid::Vectors;
use crate::retrieval::sources::{self, Corpus};
use crate::retrieval::{DocKind, Document, RetrievalError};
use serde::Deserialize;
use std::fs;
use std::path::{Path, PathBuf};

/// An ingest whose sources are read and checked, ready to embed and write.
pub(crate) struct Plan {
    pub source: PathBuf,
    pub target: PathBuf,
    pub corpus: Corpus,
    /// `.NAME.partial` beside the target: the bundle being built and resumable embeddings.
    pub staging: PathBuf,
}

impl Plan {
    /// Reads `source` and checks that `target` may be written.
    pub(crate) fn new(source: &Path, target: &Path) -> Result<Self, RetrievalError> {
        let source = source
            .canonicalize()
            .map_err(|e| RetrievalError::io(source, e))?;
        check_target(&source, target)?;
        let corpus = sources::load_dir(&source)?;
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
            source,
            target: target.to_path_buf(),
            corpus,
        })
    }

    /// The passages, in index order.
    pub(crate) fn passages(&self) -> impl Iterator<Item = &Document> {
        self.corpus
            .docs
            .iter()
            .filter(|d| d.kind == DocKind::Episode)
    }

    /// Writes the bundle (with `vectors` when given) and moves it into place.
    pub(crate) fn finish(
        self,
        vectors: Option<Embedded>,
        progress: &dyn Progress,
        (embedded, embedding_calls): (usize, usize),
    ) -> Result<IngestSummary, RetrievalError> {
        fs::create_dir_all(&self.staging).map_err(|e| RetrievalError::io(&self.staging, e))?;
        let build = self.staging.join("bundle");
        remove_dir_if_exists(&build)?;
        let index_dir = build.join(INDEX_DIR);
        fs::create_dir_all(&index_dir).map_err(|e| RetrievalError::io(&index_dir, e))?;

        let docs = &self.corpus.docs;
        progress.stage("indexing", docs.len() as u64);
        drop(SearchIndex::build_in_dir(&index_dir, docs)?);
        progress.advance(docs.len() as u64);
        progress.finish();

        let embedding = vectors.as_ref().map(|v| v.info.clone());
        if let Some(embedded) = &vectors {
            let bytes = Vectors::encode(&embedded.vectors, embedded.info.dimensions);
            write(&build.join(VECTORS_FILE), &bytes)?;
        }
        let manifest = Manifest {
            format: FORMAT.into(),
            format_version: FORMAT_VERSION,
            content_hash: content_hash(docs, embedding.as_ref()),
            created_at: now_rfc3339(),
            counts: self.corpus.stats,
            embedding,
            analyzer: ANALYZER.into(),
            files: describe_files(&build)?,
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

        Ok(IngestSummary {
            stats: self.corpus.stats,
            skipped_files: self.corpus.skipped_files,
            source: self.source,
            target: self.target,
            manifest,
            embedded,
            embedding_calls,
        })
    }
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

pub(crate) fn remove_dir_if_exists(dir: &Path) -> Result<(), RetrievalError> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(RetrievalError::io(dir, e)),
        _ => Ok(()),
    }
}

fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| now.unix_timestamp().to_string())
}
