//! Errors of the knowledge rooms (search, kb, ingest), classified once. Web search has its own
//! ([`super::WebSearchError`]).
//!
//! Knowledge-base errors (files, parsing, the search index) are permanent: retrying the same
//! load reads the same bad file. A remote store's, an embeddings call's and a rerank call's
//! failures keep the class given where they happened.
use super::rerank::RerankError;
use crate::embed::EmbedError;
use crate::error::{Classify, ErrorClass};
use std::path::PathBuf;
use std::time::Duration;

/// A failed retrieval, knowledge-base load or write, or ingest.
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
    /// A file or folder is unusable as a whole (not UTF-8, bad manifest, wrong format version).
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file or folder.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
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
    /// An embeddings call failed (the query's, during a run).
    #[error(transparent)]
    Embedding(#[from] EmbedError),
    /// A rerank call failed.
    #[error(transparent)]
    Rerank(#[from] RerankError),
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
            Self::Io { .. }
            | Self::Invalid { .. }
            | Self::Target { .. }
            | Self::Index { .. }
            | Self::S3 { .. } => ErrorClass::Permanent,
            Self::Store { class, .. } => *class,
            Self::Embedding(e) => e.class(),
            Self::Rerank(e) => e.class(),
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Embedding(e) => e.retry_after(),
            Self::Rerank(e) => e.retry_after(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_errors_keep_their_class_and_local_ones_are_permanent() {
        let err = RetrievalError::index("opening the index", "corrupt segment");
        assert_eq!(err.class(), ErrorClass::Permanent);
        assert_eq!(
            err.to_string(),
            "search index error while opening the index: corrupt segment"
        );
        let store = |class| RetrievalError::Store {
            store: "bedrock-kb://KB1".into(),
            message: "throttled".into(),
            class,
        };
        assert!(store(ErrorClass::Transient).is_transient());
        assert!(!store(ErrorClass::Permanent).is_transient());
        assert_eq!(store(ErrorClass::Transient).retry_after(), None);
    }
}
