//! What the last sync of a destination knew, stored beside its bundles
//! (`PREFIX/.sync/state.json.gz`): every source file by relative path, with the fingerprint
//! that tells a change without reading (a local file's size and modification time, an S3
//! object's ETag), the SHA-256 of its bytes, and what its reader made of it. A sync reads only
//! the files whose fingerprint moved, and rebuilds the corpus of everything else from here.
use crate::knowledge::{Format, SkipReason};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{Read, Write};

/// The state's format, checked on load.
const STATE_FORMAT: &str = "bounded-rag-sync/1";

/// Every source file of the last sync, and the version it published.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SyncState {
    pub format: String,
    /// The version (content hash) published from these documents.
    pub version: Option<String>,
    /// When the source was listed (Unix nanoseconds): a file modified so close to it that a
    /// later change could keep its modification time is compared by hash (see `Listed::racy`).
    #[serde(default)]
    pub listed_at: u128,
    /// By relative, `/`-separated path (sorted: the corpus order).
    pub documents: BTreeMap<String, DocState>,
}

impl Default for SyncState {
    fn default() -> Self {
        Self {
            format: STATE_FORMAT.into(),
            version: None,
            listed_at: 0,
            documents: BTreeMap::new(),
        }
    }
}

/// One source file as of the last sync.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct DocState {
    /// Size and modification time, or the ETag (and version id): equal means unchanged.
    pub fingerprint: String,
    /// SHA-256 of the bytes (hex); empty for a file skipped unread.
    pub hash: String,
    /// What became of it.
    pub status: DocStatus,
}

/// What a reader made of one source file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum DocStatus {
    /// Read: its text (or a PDF's pages), to chunk into passages.
    Read {
        /// `None` for a graph file or a metadata sidecar.
        format: Option<Format>,
        /// The text (empty for a PDF).
        text: String,
        /// A PDF's pages.
        pages: Vec<String>,
    },
    /// Not ingested, for one of ingest's own reasons (as `ingest` would skip it).
    Skipped {
        /// Why.
        reason: SkipReason,
    },
    /// Its reader failed on it: the other files go on without it.
    Failed {
        /// Why.
        reason: FailReason,
    },
}

/// Why a source file failed to sync. A failed file is left out of the version; it is read
/// again only when it changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FailReason {
    /// The reader panicked.
    #[error("the reader panicked: {message}")]
    Panicked {
        /// The panic's message.
        message: String,
    },
    /// The reader ran past its time limit (left behind on its own thread).
    #[error("the reader ran past {seconds} s")]
    TimedOut {
        /// The limit.
        seconds: u64,
    },
    /// The reader made more text than a document may hold.
    #[error("the reader made {bytes} bytes of text (limit {limit})")]
    Runaway {
        /// Bytes of text made.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// Not readable in its format (not UTF-8, malformed HTML, a bad graph line, ...).
    #[error("unreadable: {detail}")]
    Unreadable {
        /// The reader's message.
        detail: String,
    },
    /// Every delivery of it failed or was cut short (the sync function gives up after a few).
    #[error("abandoned after {attempts} attempts")]
    Abandoned {
        /// Attempts made.
        attempts: u32,
    },
    /// The bytes could not be fetched (gone, or access denied).
    #[error("could not be fetched: {detail}")]
    Unfetchable {
        /// The store's message.
        detail: String,
    },
}

impl SyncState {
    /// The stored form: gzip of the JSON.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let json = serde_json::to_vec(self).expect("sync state serializes");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&json).expect("writing to memory");
        gz.finish().expect("writing to memory")
    }

    /// Reads the stored form, checking the format.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, String> {
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut json)
            .map_err(|e| format!("the sync state is not gzip: {e}"))?;
        let state: SyncState = serde_json::from_slice(&json)
            .map_err(|e| format!("the sync state is not valid: {e}"))?;
        if state.format != STATE_FORMAT {
            return Err(format!("unknown sync state {}", state.format));
        }
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_reasons_have_stable_names() {
        let failed = DocStatus::Failed {
            reason: FailReason::TimedOut { seconds: 5 },
        };
        assert_eq!(
            serde_json::to_value(&failed).unwrap(),
            serde_json::json!({"status": "failed", "reason": {"kind": "timed_out", "seconds": 5}})
        );
        let skipped = DocStatus::Skipped {
            reason: SkipReason::Empty,
        };
        let back: DocStatus =
            serde_json::from_value(serde_json::to_value(&skipped).unwrap()).unwrap();
        assert_eq!(back, skipped);
        assert_eq!(
            FailReason::Runaway { bytes: 9, limit: 4 }.to_string(),
            "the reader made 9 bytes of text (limit 4)"
        );
    }
}
