//! Files ingest found but could not use, each with a typed reason: named in the ingest summary
//! and the bundle manifest, never dropped silently (`ingest --strict` fails on any).
use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a file was not ingested.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SkipReason {
    /// Not a format ingest reads.
    UnknownExtension,
    /// PDF, Word or CSV/TSV where no parser is enabled: a Lambda function's `KB_PATH` folder
    /// (they load bundles), or a build without the `formats` feature.
    NoReader,
    /// Zero bytes, or nothing but white space once read.
    Empty,
    /// Over `MAX_DOCUMENT_BYTES`; not read at all.
    TooLarge {
        /// The file's size.
        bytes: u64,
        /// The limit in force.
        limit: u64,
    },
    /// A PDF whose pages hold no text (a scan without OCR, or only images).
    NoTextLayer,
    /// A PDF that needs a password.
    Encrypted,
    /// The file ends before its format says it should (a PDF without `%%EOF`).
    Truncated,
    /// The file is not valid in its format.
    Corrupt {
        /// The parser's message.
        detail: String,
    },
    /// A CSV or TSV row with another number of fields than the header.
    RaggedRows {
        /// 1-based line of the row.
        line: u64,
        /// Fields in the header.
        expected: u64,
        /// Fields in that row.
        found: u64,
    },
    /// The parser did not finish within its time limit.
    TimedOut {
        /// The limit, in seconds.
        seconds: u64,
    },
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownExtension => f.write_str("unknown extension"),
            Self::NoReader => f.write_str("no reader here: run `bounded-rag ingest`"),
            Self::Empty => f.write_str("empty file"),
            Self::TooLarge { bytes, limit } => {
                write!(f, "{bytes} bytes, over MAX_DOCUMENT_BYTES ({limit})")
            }
            Self::NoTextLayer => f.write_str("scanned? no text to index"),
            Self::Encrypted => f.write_str("encrypted PDF"),
            Self::Truncated => f.write_str("truncated file"),
            Self::Corrupt { detail } => write!(f, "corrupt file: {detail}"),
            Self::RaggedRows {
                line,
                expected,
                found,
            } => write!(
                f,
                "ragged rows: line {line} has {found} fields, the header {expected}"
            ),
            Self::TimedOut { seconds } => write!(f, "not read within {seconds} s"),
        }
    }
}

/// A file that was not ingested, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFile {
    /// Relative, `/`-separated path under the source folder.
    pub path: String,
    /// Why.
    #[serde(flatten)]
    pub reason: SkipReason,
}

impl fmt::Display for SkippedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_serialize_with_a_typed_reason() {
        let skip = SkippedFile {
            path: "data/t.csv".into(),
            reason: SkipReason::RaggedRows {
                line: 3,
                expected: 2,
                found: 3,
            },
        };
        let json = serde_json::to_string(&skip).unwrap();
        assert_eq!(
            json,
            r#"{"path":"data/t.csv","reason":"ragged_rows","line":3,"expected":2,"found":3}"#
        );
        assert_eq!(serde_json::from_str::<SkippedFile>(&json).unwrap(), skip);
        assert_eq!(
            skip.to_string(),
            "data/t.csv: ragged rows: line 3 has 3 fields, the header 2"
        );
        let scan = SkippedFile {
            path: "scan.pdf".into(),
            reason: SkipReason::NoTextLayer,
        };
        assert_eq!(
            serde_json::to_string(&scan).unwrap(),
            r#"{"path":"scan.pdf","reason":"no_text_layer"}"#
        );
        assert_eq!(scan.to_string(), "scan.pdf: scanned? no text to index");
    }
}
