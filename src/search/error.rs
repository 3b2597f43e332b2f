//! Errors of the knowledge rooms (search, ingest) and of web search, classified once.
//!
//! Knowledge-base errors (files, parsing, the search index) are permanent: retrying the same
//! load reads the same bad file. Web-search errors follow HTTP semantics: timeouts, connection
//! failures, 408, 429 and 5xx are transient (with the server's `Retry-After` when given); any
//! other 4xx and a malformed response are permanent.
use super::rerank::RerankError;
use super::skipped_file::SkippedFile;
use super::source_format::Format;
use crate::embed::EmbedError;
use crate::error::{Classify, ErrorClass};
use crate::outbound::status_is_transient;
use std::path::PathBuf;
use std::time::Duration;

/// A failed retrieval, knowledge-base load, ingest or web search.
#[derive(Debug, thiserror::Error)]
pub enum RetrievalError {
    /// A file or folder could not be read or written.
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
    /// A file or folder is unusable as a whole (not UTF-8, bad manifest, wrong format version).
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file or folder.
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
    /// Ingest refused to write into its target folder.
    #[error("refusing to write into {}: {reason}", path.display())]
    Target {
        /// The target folder.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The search index could not be built, opened or queried.
    #[error("search index error while {context}: {message}")]
    Index {
        /// What was being done.
        context: String,
        /// The index library's message.
        message: String,
    },
    /// The web search did not answer within the per-call timeout.
    #[error("web search timed out after {} ms", after.as_millis())]
    Timeout {
        /// The timeout that expired.
        after: Duration,
    },
    /// The web search could not be reached, or the connection broke.
    #[error("web search connection failed: {0}")]
    Connect(String),
    /// The web search answered with an HTTP error status.
    #[error("web search returned HTTP {status}: {message}")]
    Http {
        /// HTTP status code.
        status: u16,
        /// Short excerpt of the body (secrets scrubbed).
        message: String,
        /// The server's `Retry-After`, if any.
        retry_after: Option<Duration>,
    },
    /// The web search answered 2xx with a body that is not the expected JSON.
    #[error("web search returned an invalid response: {0}")]
    InvalidResponse(String),
    /// The web search client is misconfigured (bad base URL, client build failure).
    #[error("web search is misconfigured: {0}")]
    Config(String),
    /// An embeddings call failed (the query's, during a run).
    #[error(transparent)]
    Embedding(#[from] EmbedError),
    /// A rerank call failed.
    #[error(transparent)]
    Rerank(#[from] RerankError),
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
    /// A remote knowledge store (a Bedrock knowledge base) failed, or cannot do what was
    /// asked; classified where it happened.
    #[error("{store}: {message}")]
    Store {
        /// The store's location (`bedrock-kb://ID`).
        store: String,
        /// What went wrong, and what to fix for a permanent failure.
        message: String,
        /// Whether the same call may succeed later.
        class: ErrorClass,
    },
    /// An S3 request failed (after the SDK's own retries), or S3 holds no usable bundle.
    #[error("{location}: {message}")]
    S3 {
        /// `s3://bucket/key` concerned.
        location: String,
        /// What went wrong.
        message: String,
    },
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

impl RetrievalError {
    /// An index error with its context.
    pub(crate) fn index(context: impl Into<String>, err: impl std::fmt::Display) -> Self {
        Self::Index {
            context: context.into(),
            message: err.to_string(),
        }
    }

    /// An I/O error on `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

impl Classify for RetrievalError {
    fn class(&self) -> ErrorClass {
        match self {
            Self::Timeout { .. } | Self::Connect(_) => ErrorClass::Transient,
            Self::Http { status, .. } if status_is_transient(*status) => ErrorClass::Transient,
            Self::Http { .. }
            | Self::Io { .. }
            | Self::Parse { .. }
            | Self::Invalid { .. }
            | Self::NoDocuments { .. }
            | Self::Skipped { .. }
            | Self::Target { .. }
            | Self::Index { .. }
            | Self::InvalidResponse(_)
            | Self::Config(_)
            | Self::Interrupted { .. }
            | Self::S3 { .. } => ErrorClass::Permanent,
            Self::Store { class, .. } => *class,
            Self::Embedding(e) => e.class(),
            Self::Rerank(e) => e.class(),
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Http { retry_after, .. } => *retry_after,
            Self::Embedding(e) => e.retry_after(),
            Self::Rerank(e) => e.retry_after(),
            _ => None,
        }
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

    fn http(status: u16, retry_after: Option<Duration>) -> RetrievalError {
        RetrievalError::Http {
            status,
            message: String::new(),
            retry_after,
        }
    }

    #[test]
    fn http_statuses_are_classified_by_retryability() {
        for status in [408, 429, 500, 502, 503, 504] {
            assert!(http(status, None).is_transient(), "{status}");
        }
        for status in [400, 401, 403, 404, 422] {
            assert_eq!(
                http(status, None).class(),
                ErrorClass::Permanent,
                "{status}"
            );
        }
    }

    #[test]
    fn retry_after_is_reported_only_for_http_errors() {
        let wait = Some(Duration::from_secs(7));
        assert_eq!(http(429, wait).retry_after(), wait);
        let timeout = RetrievalError::Timeout {
            after: Duration::from_secs(1),
        };
        assert!(timeout.is_transient());
        assert_eq!(timeout.retry_after(), None);
    }

    #[test]
    fn knowledge_base_errors_are_permanent_and_name_the_file() {
        let err = RetrievalError::Parse {
            path: "kb/edges.jsonl".into(),
            line: 3,
            message: "missing field `fact`".into(),
        };
        assert_eq!(err.class(), ErrorClass::Permanent);
        assert_eq!(err.to_string(), "kb/edges.jsonl:3: missing field `fact`");
        let err = RetrievalError::NoDocuments {
            path: "x".into(),
            skipped: Vec::new(),
        };
        assert!(err.to_string().starts_with("no documents in x"));
        for ext in [
            ".md", ".txt", ".html", ".pdf", ".docx", ".rst", ".csv", ".tsv",
        ] {
            assert!(err.to_string().contains(ext), "{err} lacks {ext}");
        }
        assert!(!RetrievalError::Connect("refused".into())
            .to_string()
            .is_empty());
    }
}
