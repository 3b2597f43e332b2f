//! Walking a folder of sources: which files count, in which order, which are passed over
//! (hidden entries, symlinked folders, bundle folders written by ingest) and which are skipped
//! with a reason; each file read through [`super::read::read_file`].
use super::jsonl;
use super::metadata;
use super::read::{self, Outcome, ReadLimits};
use super::source_file::SourceFile;
use crate::ingest::IngestError;
use crate::kb::holds_bundle;
use crate::knowledge::{Format, SkipReason, SkippedFile};
use std::fs;
use std::path::{Path, PathBuf};

/// Whether a file is a graph file or a metadata sidecar (read as UTF-8 text, never a document).
fn is_auxiliary(path: &Path) -> bool {
    metadata::is_sidecar(&path.to_string_lossy()) || jsonl::graph_kind(path).is_some()
}

/// How the file at `path` is read: `Ok(None)` as text (a graph file or metadata sidecar),
/// `Ok(Some(format))` as a document, `Err` when ingest reads no such file.
pub(crate) fn reading_format(path: &Path) -> Result<Option<Format>, SkipReason> {
    if is_auxiliary(path) {
        return Ok(None);
    }
    Format::of(path)
        .map(Some)
        .ok_or(SkipReason::UnknownExtension)
}

/// Every file under `root` a source can be: its path and its `/`-separated path relative to
/// `root`, in no particular order. Hidden entries (`.git`, dotfiles) and folders written by
/// ingest (they hold an index, not sources) are passed over; symlinked files are followed,
/// symlinked folders are not (no cycles).
pub(crate) fn files_under(root: &Path) -> Result<Vec<(PathBuf, String)>, IngestError> {
    let mut out = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| IngestError::io(&dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| IngestError::io(&dir, e))?;
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let file_type = entry.file_type().map_err(|e| IngestError::io(&path, e))?;
            if file_type.is_dir() {
                if !holds_bundle(&path) {
                    pending.push(path);
                }
                continue;
            }
            if !path.is_file() {
                continue;
            }
            let rel = path.strip_prefix(root).unwrap_or(&path);
            let rel: Vec<_> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect();
            let rel = rel.join("/");
            out.push((path, rel));
        }
    }
    Ok(out)
}

/// Reads every source file under `root`, sorted by relative path, and the files skipped.
pub(crate) fn read_dir(
    root: &Path,
    limits: &ReadLimits,
) -> Result<(Vec<SourceFile>, Vec<SkippedFile>), IngestError> {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for (path, rel) in files_under(root)? {
        let format = match reading_format(&path) {
            Ok(format) => format,
            Err(reason) => {
                skipped.push(SkippedFile { path: rel, reason });
                continue;
            }
        };
        match read::read_file(path, rel, format, limits)? {
            Outcome::Read(file) => files.push(file),
            Outcome::Skipped(skip) => skipped.push(skip),
        }
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((files, skipped))
}
