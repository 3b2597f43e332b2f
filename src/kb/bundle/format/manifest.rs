//! The manifest of a bundle (`kb-manifest.json`): what it is, what it holds, and every file
//! with its size and SHA-256, so a reader can tell a complete, intact bundle from anything
//! else before loading a byte of index.
use crate::knowledge::DocumentInfo;
use crate::knowledge::EmbeddingInfo;
use crate::knowledge::SkippedFile;
use crate::knowledge::{sha256_hex, KbStats};
use crate::search::RetrievalError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The `format` of every bundle.
pub(crate) const FORMAT: &str = "bounded-rag-kb";
/// The bundle layout this build reads and writes. 3: passages index their document title and
/// heading path as separate fields, with a source key per item, and the analyzer is recorded.
pub const FORMAT_VERSION: u32 = 3;

/// The text analysis of every index this build writes: tantivy's simple tokenizer, lower
/// case, English stop words (Lucene's list and question words), tantivy's English (Snowball
/// Porter) stemmer.
pub(crate) const ANALYZER: &str = "simple+lowercase+stop_en+stem_en";

/// One file of a bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleFile {
    /// Path inside the bundle, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// SHA-256 of the content, lowercase hex.
    pub(crate) sha256: String,
}

/// What a bundle is and holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// Layout version; this build reads [`FORMAT_VERSION`].
    pub format_version: u32,
    /// SHA-256 of the indexed content and the embedding model: the bundle's version. The same
    /// sources ingested the same way give the same hash.
    pub content_hash: String,
    /// When the bundle was built (RFC 3339); not part of the hash.
    pub created_at: String,
    /// Documents, passages, entities, relations and communities.
    pub counts: KbStats,
    /// The vectors' model, or `None` when the bundle has no vectors (BM25 only).
    pub embedding: Option<EmbeddingInfo>,
    /// The text analysis of the index (tokenizer, stop words, stemmer; see
    /// [`ANALYZER`]): queries must be analysed the same way, so a bundle written with another
    /// one is refused.
    pub(crate) analyzer: String,
    /// Every file but the manifest.
    pub files: Vec<BundleFile>,
    /// The metadata keys documents carry (filterable); empty in bundles without metadata.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metadata_keys: Vec<String>,
    /// Each document with its format, pages (PDF) and passages; empty in bundles written
    /// before formats were recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub documents: Vec<DocumentInfo>,
    /// The files ingest found but did not use, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedFile>,
    /// What the knowledge base covers, for the router: given with `ingest --description`, or
    /// derived from the documents' titles and headings. Not part of the version. `None` in
    /// bundles written before descriptions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl Manifest {
    /// Parses and checks a manifest; `origin` names it in errors.
    pub fn parse(bytes: &[u8], origin: &Path) -> Result<Self, RetrievalError> {
        let invalid = |message: String| RetrievalError::Invalid {
            path: origin.to_path_buf(),
            message,
        };
        #[derive(Deserialize)]
        struct Head {
            format: String,
            format_version: u32,
        }
        let head: Head = serde_json::from_slice(bytes)
            .map_err(|e| invalid(format!("not a knowledge-base manifest: {e}")))?;
        if head.format != FORMAT {
            return Err(invalid(format!("unknown format `{}`", head.format)));
        }
        if head.format_version != FORMAT_VERSION {
            return Err(invalid(format!(
                "format version {} is not supported (expected {FORMAT_VERSION}); re-run ingest",
                head.format_version
            )));
        }
        let manifest: Manifest = serde_json::from_slice(bytes)
            .map_err(|e| invalid(format!("malformed manifest: {e}")))?;
        if manifest.analyzer != ANALYZER {
            return Err(invalid(format!(
                "the index was analysed with `{}`, this build uses `{ANALYZER}`; re-run ingest",
                manifest.analyzer
            )));
        }
        let hex64 = |s: &str| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
        if !hex64(&manifest.content_hash) {
            return Err(invalid("content_hash is not a SHA-256".into()));
        }
        for file in &manifest.files {
            let safe = !file.path.is_empty()
                && !file.path.starts_with('/')
                && file.path.split('/').all(|p| !p.is_empty() && p != "..");
            if !safe || !hex64(&file.sha256) {
                return Err(invalid(format!("bad file entry `{}`", file.path)));
            }
        }
        Ok(manifest)
    }

    /// The entry of `path`, if the bundle has that file.
    pub fn file(&self, path: &str) -> Option<&BundleFile> {
        self.files.iter().find(|f| f.path == path)
    }

    /// Total size of the files (manifest excluded).
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }
}

impl BundleFile {
    /// The entry for `bytes` stored at `path`.
    pub(crate) fn describe(path: &str, bytes: &[u8]) -> Self {
        Self {
            path: path.to_owned(),
            bytes: bytes.len() as u64,
            sha256: sha256_hex(bytes),
        }
    }

    /// Checks that `bytes` are this file: size and SHA-256. `origin` names it in errors.
    pub(crate) fn verify(&self, bytes: &[u8], origin: &str) -> Result<(), RetrievalError> {
        let invalid = |message: String| RetrievalError::Invalid {
            path: origin.into(),
            message,
        };
        if bytes.len() as u64 != self.bytes {
            return Err(invalid(format!(
                "{} bytes where the manifest says {}: the bundle is incomplete or corrupt",
                bytes.len(),
                self.bytes
            )));
        }
        if sha256_hex(bytes) != self.sha256 {
            return Err(invalid(
                "content does not match the manifest's SHA-256: the bundle is corrupt".into(),
            ));
        }
        Ok(())
    }
}

/// Now, as RFC 3339 (a manifest's `created_at`, a pointer's `published_at`).
pub(crate) fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| now.unix_timestamp().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest_json(version: u32, analyzer: &str) -> String {
        serde_json::json!({
            "format": FORMAT, "format_version": version, "content_hash": "a".repeat(64),
            "created_at": "2026-01-01T00:00:00Z", "counts": KbStats::default(),
            "embedding": null, "analyzer": analyzer, "files": []
        })
        .to_string()
    }

    #[test]
    fn older_layouts_and_other_analyzers_are_refused_with_re_run_ingest() {
        let origin = Path::new("kb");
        assert!(Manifest::parse(manifest_json(3, ANALYZER).as_bytes(), origin).is_ok());
        let old = Manifest::parse(manifest_json(2, ANALYZER).as_bytes(), origin).unwrap_err();
        assert!(
            old.to_string()
                .ends_with("format version 2 is not supported (expected 3); re-run ingest"),
            "{old}"
        );
        let other = Manifest::parse(manifest_json(3, "whitespace").as_bytes(), origin);
        let err = other.unwrap_err().to_string();
        assert!(
            err.contains("analysed with `whitespace`") && err.ends_with("re-run ingest"),
            "{err}"
        );
    }
}
