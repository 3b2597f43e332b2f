//! An ingest's plan: the sources read and checked, and the staging folder the writer named
//! (where embeddings resume from). Embedding (`embedding`) works from it; the writer of
//! [`crate::kb`] takes its corpus.
use crate::ingest::sources;
use crate::ingest::IngestError;
use crate::knowledge::Corpus;
use crate::knowledge::{DocKind, Document};
use std::path::{Path, PathBuf};

/// An ingest whose sources are read and checked, ready to embed and write.
pub(crate) struct Plan {
    pub source: PathBuf,
    pub corpus: Corpus,
    /// Where the writer stages its work and an interrupted ingest's vectors are kept.
    pub staging: PathBuf,
}

impl Plan {
    /// Reads `source` (canonical, see [`canonical`]); with `strict`, any skipped file is an
    /// error.
    pub(crate) fn read(
        source: PathBuf,
        staging: PathBuf,
        strict: bool,
    ) -> Result<Self, IngestError> {
        let corpus = sources::load_dir(&source)?;
        if strict && !corpus.skipped.is_empty() {
            return Err(IngestError::Skipped {
                files: corpus.skipped,
            });
        }
        Ok(Self {
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

/// `source` as an absolute path without links (a missing source fails here, naming it).
pub(crate) fn canonical(source: &Path) -> Result<PathBuf, IngestError> {
    source
        .canonicalize()
        .map_err(|e| IngestError::io(source, e))
}
