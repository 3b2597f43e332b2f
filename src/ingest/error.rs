//! Ingest's own error: what reading sources, checking them and embedding their passages can
//! raise, and the store's failure when the writer (or an index built in memory) fails,
//! classified once. A source read the same way fails the same way, so every failure of ingest's
//! own is permanent; the store's keeps its class (a database that timed out may answer later).
use crate::embed::EmbedError;
use crate::error::{Classify, ErrorClass};
use crate::knowledge::{Format, SkippedFile};
use crate::search::RetrievalError;
use std::path::PathBuf;
use std::time::Duration;

/// A failed ingest or sync read.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// A source file or folder could not be read, or staging could not be written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// One line of a JSONL source file is malformed (`line` is 1-based).
    #[error("{}:{line}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with the line.
        message: String,
    },
    /// A source file is unusable as a whole (not UTF-8, unreadable as its format).
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The folder holds nothing to index.
    #[error(
        "no documents in {}: expected {} files, or nodes.jsonl, edges.jsonl or \
         communities.jsonl{}",
        path.display(),
        Format::all_extensions(),
        skipped_files(skipped)
    )]
    NoDocuments {
        /// The folder.
        path: PathBuf,
        /// The files found but skipped, with the reason (sorted by path).
        skipped: Vec<SkippedFile>,
    },
    /// `ingest --strict`: files were skipped, so nothing was written.
    #[error(
        "{} files skipped (--strict): {}",
        files.len(),
        files.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    Skipped {
        /// Each file skipped, with the reason.
        files: Vec<SkippedFile>,
    },
    /// An ingest stopped because a batch could not be embedded; running it again resumes.
    #[error(
        "embedding stopped after {done} of {total} passages: {source}{}; the vectors received \
         are kept in {} and the next ingest of this folder resumes from there",
        raise_hint(source),
        staging.display()
    )]
    Interrupted {
        /// Passages embedded (this run and earlier ones).
        done: usize,
        /// Passages in the corpus.
        total: usize,
        /// The staging folder holding them.
        staging: PathBuf,
        /// Why the batch failed.
        #[source]
        source: EmbedError,
    },
    /// A source on S3 could not be listed or read (after the SDK's own retries).
    #[error("{location}: {message}")]
    S3 {
        /// `s3://bucket/key` concerned.
        location: String,
        /// What went wrong.
        message: String,
    },
    /// The store failed: the writer, the index, a bundle's manifest, S3, the database.
    #[error(transparent)]
    Kb(#[from] RetrievalError),
}

impl IngestError {
    /// An I/O error on `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

impl Classify for IngestError {
    fn class(&self) -> ErrorClass {
        match self {
            Self::Kb(e) => e.class(),
            Self::Io { .. }
            | Self::Parse { .. }
            | Self::Invalid { .. }
            | Self::NoDocuments { .. }
            | Self::Skipped { .. }
            | Self::Interrupted { .. }
            | Self::S3 { .. } => ErrorClass::Permanent,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Kb(e) => e.retry_after(),
            _ => None,
        }
    }
}

/// What to change when an ingest's embeddings call timed out: the setting, not the sources.
fn raise_hint(source: &EmbedError) -> &'static str {
    match source {
        EmbedError::Timeout { .. } => {
            " (raise EMBEDDINGS_TIMEOUT_MS, or lower EMBEDDINGS_BATCH_SIZE, for a slow server)"
        }
        _ => "",
    }
}

/// `; every file found was skipped: PATH: REASON; ...`, or nothing when none was.
fn skipped_files(skipped: &[SkippedFile]) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    let files: Vec<String> = skipped.iter().map(ToString::to_string).collect();
    format!(
        "; all {} files found were skipped: {}",
        files.len(),
        files.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knowledge_base_errors_are_permanent_and_name_the_file() {
        let err = IngestError::Parse {
            path: "kb/edges.jsonl".into(),
            line: 3,
            message: "missing field `fact`".into(),
        };
        assert_eq!(err.class(), ErrorClass::Permanent);
        assert_eq!(err.to_string(), "kb/edges.jsonl:3: missing field `fact`");
        let err = IngestError::NoDocuments {
            path: "x".into(),
            skipped: Vec::new(),
        };
        assert!(err.to_string().starts_with("no documents in x"));
        for ext in [
            ".md", ".txt", ".html", ".pdf", ".docx", ".rst", ".csv", ".tsv",
        ] {
            assert!(err.to_string().contains(ext), "{err} lacks {ext}");
        }
    }

    #[test]
    fn a_store_failure_keeps_its_class() {
        let store = RetrievalError::Store {
            store: "postgres://db".into(),
            message: "timed out".into(),
            class: ErrorClass::Transient,
        };
        assert!(IngestError::from(store).is_transient());
        assert!(!IngestError::Skipped { files: Vec::new() }.is_transient());
    }
}
