//! An ingest's plan: the sources read and checked, the target checked, the staging folder
//! named. Embedding (`embedding`) and writing (`write`) both work from it.
use crate::ingest::sources::{self, Corpus};
use crate::kb::bundle::format::{FORMAT, MANIFEST};
use crate::search::{DocKind, Document, RetrievalError};
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
    /// Reads `source` and checks that `target` may be written; with `strict`, any skipped
    /// file is an error.
    pub(crate) fn new(source: &Path, target: &Path, strict: bool) -> Result<Self, RetrievalError> {
        let source = source
            .canonicalize()
            .map_err(|e| RetrievalError::io(source, e))?;
        check_target(&source, target)?;
        let corpus = sources::load_dir(&source)?;
        if strict && !corpus.skipped.is_empty() {
            return Err(RetrievalError::Skipped {
                files: corpus.skipped,
            });
        }
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

    /// Reads `source` for a store that is not a folder (a database): embeddings resume from
    /// `staging`, nothing else is written there.
    pub(crate) fn for_store(
        source: &Path,
        staging: PathBuf,
        strict: bool,
    ) -> Result<Self, RetrievalError> {
        let source = source
            .canonicalize()
            .map_err(|e| RetrievalError::io(source, e))?;
        let corpus = sources::load_dir(&source)?;
        if strict && !corpus.skipped.is_empty() {
            return Err(RetrievalError::Skipped {
                files: corpus.skipped,
            });
        }
        Ok(Self {
            target: staging.clone(),
            staging,
            source,
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
