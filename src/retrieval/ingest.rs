//! `bounded-rag ingest DIR`: validates a folder of sources once and writes a persisted index,
//! so a knowledge base opens at init without re-indexing.
//!
//! Output layout of `target`:
//! - `index/`: the tantivy index (memory-mapped when opened);
//! - `kb-manifest.json`: format and version, source folder, creation time, counts.
//!
//! A new index is built beside the old one and swapped in, and the manifest is written last,
//! so an interrupted ingest never leaves a manifest describing a half-written index.
use super::corpus::{self, MANIFEST};
use super::index::SearchIndex;
use super::kb::KbStats;
use super::RetrievalError;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

const FORMAT: &str = "bounded-rag-kb";
const FORMAT_VERSION: u32 = 1;
const INDEX_DIR: &str = "index";

/// What an ingest wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngestSummary {
    /// Counts of what was indexed.
    pub stats: KbStats,
    /// Files under the source that are not knowledge-base sources and were ignored.
    pub skipped_files: usize,
    /// The source folder (absolute when it could be resolved).
    pub source: PathBuf,
    /// The output folder.
    pub target: PathBuf,
}

impl std::fmt::Display for IngestSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ingested {} into {}: {}",
            self.source.display(),
            self.target.display(),
            self.stats
        )?;
        if self.skipped_files > 0 {
            write!(f, "; {} other files ignored", self.skipped_files)?;
        }
        Ok(())
    }
}

/// The manifest written next to the index.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    format: String,
    format_version: u32,
    source: PathBuf,
    created_at: String,
    stats: KbStats,
}

/// Ingests `source` (walked recursively) into a knowledge base at `target`.
///
/// `target` must be missing, empty, or a previous ingest output (which is replaced). Nothing is
/// written unless every source file is valid.
pub fn ingest_dir(source: &Path, target: &Path) -> Result<IngestSummary, RetrievalError> {
    let source = source
        .canonicalize()
        .map_err(|e| RetrievalError::io(source, e))?;
    check_target(&source, target)?;
    let corpus = corpus::load_dir(&source)?;
    fs::create_dir_all(target).map_err(|e| RetrievalError::io(target, e))?;

    let staging = target.join(format!(".{INDEX_DIR}-{}.tmp", std::process::id()));
    remove_dir_if_exists(&staging)?;
    fs::create_dir(&staging).map_err(|e| RetrievalError::io(&staging, e))?;
    let built = SearchIndex::build_in_dir(&staging, &corpus.docs).map(drop);
    if let Err(err) = built {
        let _ = fs::remove_dir_all(&staging);
        return Err(err);
    }

    let manifest = Manifest {
        format: FORMAT.into(),
        format_version: FORMAT_VERSION,
        source: source.clone(),
        created_at: now_rfc3339(),
        stats: corpus.stats,
    };
    let final_index = target.join(INDEX_DIR);
    remove_dir_if_exists(&final_index)?;
    fs::rename(&staging, &final_index).map_err(|e| RetrievalError::io(&final_index, e))?;
    let json = serde_json::to_vec_pretty(&manifest).expect("manifest serializes");
    let manifest_path = target.join(MANIFEST);
    let staging_manifest = target.join(format!(".{MANIFEST}.tmp"));
    fs::write(&staging_manifest, json).map_err(|e| RetrievalError::io(&staging_manifest, e))?;
    fs::rename(&staging_manifest, &manifest_path)
        .map_err(|e| RetrievalError::io(&manifest_path, e))?;

    Ok(IngestSummary {
        stats: corpus.stats,
        skipped_files: corpus.skipped_files,
        source,
        target: target.to_path_buf(),
    })
}

/// Opens an ingest output: the index and the counts from its manifest.
pub(crate) fn open(dir: &Path) -> Result<(SearchIndex, KbStats), RetrievalError> {
    let manifest = read_manifest(dir)?;
    let index_dir = dir.join(INDEX_DIR);
    if !index_dir.join("meta.json").is_file() {
        return Err(RetrievalError::Invalid {
            path: index_dir,
            message: "the index is missing or incomplete; re-run ingest".into(),
        });
    }
    let index = SearchIndex::open(&index_dir)?;
    if index.num_docs() != manifest.stats.indexed() as u64 {
        return Err(RetrievalError::Invalid {
            path: dir.to_path_buf(),
            message: format!(
                "the index holds {} items but the manifest says {}; re-run ingest",
                index.num_docs(),
                manifest.stats.indexed()
            ),
        });
    }
    Ok((index, manifest.stats))
}

fn read_manifest(dir: &Path) -> Result<Manifest, RetrievalError> {
    let path = dir.join(MANIFEST);
    let text = fs::read_to_string(&path).map_err(|e| RetrievalError::io(&path, e))?;
    let invalid = |message: String| RetrievalError::Invalid {
        path: path.clone(),
        message,
    };
    let manifest: Manifest = serde_json::from_str(&text)
        .map_err(|e| invalid(format!("not a knowledge-base manifest: {e}")))?;
    if manifest.format != FORMAT {
        return Err(invalid(format!("unknown format `{}`", manifest.format)));
    }
    if manifest.format_version != FORMAT_VERSION {
        return Err(invalid(format!(
            "format version {} is not supported (expected {FORMAT_VERSION}); re-run ingest",
            manifest.format_version
        )));
    }
    Ok(manifest)
}

/// `target` may be missing, empty, or a previous ingest output; never the source itself.
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
    if entries.next().is_none() {
        return Ok(());
    }
    if is_ingest_output(target) {
        return Ok(());
    }
    Err(refuse(
        "it is not empty and is not a previous ingest output (no kb-manifest.json)",
    ))
}

/// Whether `dir` holds a manifest of this format, of any version (so old outputs can be
/// replaced).
fn is_ingest_output(dir: &Path) -> bool {
    #[derive(Deserialize)]
    struct Format {
        format: String,
    }
    fs::read(dir.join(MANIFEST))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Format>(&bytes).ok())
        .is_some_and(|m| m.format == FORMAT)
}

fn remove_dir_if_exists(dir: &Path) -> Result<(), RetrievalError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieval::{KnowledgeBase, RetrievalOptions};

    fn source() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("a.md"),
            "# Pink disease\n\nPink crusts on branches.",
        )
        .unwrap();
        dir
    }

    #[test]
    fn ingest_writes_an_index_and_manifest_that_load_opens() {
        let src = source();
        let out = tempfile::tempdir().unwrap();
        let target = out.path().join("kb");
        let summary = ingest_dir(src.path(), &target).unwrap();
        assert_eq!(summary.stats.passages, 1);
        let manifest = read_manifest(&target).unwrap();
        assert_eq!(manifest.format_version, FORMAT_VERSION);
        assert_eq!(manifest.source, src.path().canonicalize().unwrap());
        let kb = KnowledgeBase::load(&target).unwrap();
        assert_eq!(kb.stats(), summary.stats);
        let hits = kb.search("pink", &RetrievalOptions::default()).unwrap();
        assert_eq!(hits[0].url, "kb://a.md#1");
        // A second ingest replaces the first.
        fs::write(src.path().join("b.txt"), "Psyllids on flushes.").unwrap();
        assert_eq!(ingest_dir(src.path(), &target).unwrap().stats.passages, 2);
        assert_eq!(KnowledgeBase::load(&target).unwrap().len(), 2);
    }

    #[test]
    fn foreign_or_source_targets_are_refused() {
        let src = source();
        let out = tempfile::tempdir().unwrap();
        fs::write(out.path().join("keep.txt"), "mine").unwrap();
        let err = ingest_dir(src.path(), out.path()).unwrap_err();
        assert!(matches!(err, RetrievalError::Target { .. }), "{err}");
        assert!(
            err.to_string().contains("not a previous ingest output"),
            "{err}"
        );
        assert_eq!(
            fs::read_to_string(out.path().join("keep.txt")).unwrap(),
            "mine"
        );
        let err = ingest_dir(src.path(), src.path()).unwrap_err();
        assert!(err.to_string().contains("contains the source"), "{err}");
    }

    #[test]
    fn stale_or_foreign_manifests_are_rejected_at_load() {
        let src = source();
        let out = tempfile::tempdir().unwrap();
        ingest_dir(src.path(), out.path()).unwrap();
        let path = out.path().join(MANIFEST);
        let text = fs::read_to_string(&path).unwrap();
        fs::write(
            &path,
            text.replace("\"format_version\": 1", "\"format_version\": 9"),
        )
        .unwrap();
        let err = KnowledgeBase::load(out.path()).unwrap_err();
        assert!(err.to_string().contains("format version 9"), "{err}");
        fs::remove_dir_all(out.path().join(INDEX_DIR)).unwrap();
        fs::write(&path, text).unwrap();
        let err = KnowledgeBase::load(out.path()).unwrap_err();
        assert!(err.to_string().contains("re-run ingest"), "{err}");
    }
}
