//! A knowledge base indexed in memory from documents a caller already has (ingest's folder
//! or the compiled-in sample, or a test's documents): the BM25 index built in RAM, versioned
//! by the content hash, opened as a bundle is.
use super::build_index::build_in_ram;
use super::hash::{content_hash, with_metadata};
use super::KnowledgeBase;
#[cfg(test)]
use crate::knowledge::DocKind;
use crate::knowledge::Document;
use crate::knowledge::KbStats;
use crate::knowledge::MetaTable;
use crate::search::RetrievalError;
#[cfg(test)]
use std::collections::BTreeSet;
use std::path::PathBuf;

/// What ingest read from a folder, for [`KnowledgeBase::index_in_memory`].
pub(crate) struct InMemory<'a> {
    /// The passages and graph records, in corpus order.
    pub docs: &'a [Document],
    /// Their metadata spans.
    pub meta: MetaTable,
    /// Their counts.
    pub stats: KbStats,
    /// What the knowledge base covers (for the router), when known.
    pub description: Option<String>,
    /// The folder they were read from (none for the sample).
    pub origin: Option<PathBuf>,
}

impl KnowledgeBase {
    /// `docs` indexed in memory, versioned by their content hash (and metadata).
    pub(crate) fn index_in_memory(corpus: InMemory<'_>) -> Result<Self, RetrievalError> {
        let index = build_in_ram(corpus.docs)?;
        let version = with_metadata(content_hash(corpus.docs, None), &corpus.meta);
        Ok(KnowledgeBase::in_memory(
            index,
            corpus.docs,
            corpus.meta,
            corpus.stats,
            version,
            corpus.description,
            corpus.origin,
        ))
    }
    /// Indexes the given documents in memory (their `score` is ignored; `Web` documents are
    /// stored but never returned). Handy for tests and callers with their own sources.
    #[cfg(test)]
    pub(crate) fn from_documents(docs: &[Document]) -> Result<Self, RetrievalError> {
        let mut stats = KbStats::default();
        let mut sources = BTreeSet::new();
        for doc in docs {
            match doc.kind {
                DocKind::Episode => {
                    stats.passages += 1;
                    sources.insert(doc.url.split('#').next().unwrap_or_default());
                }
                DocKind::Node => stats.nodes += 1,
                DocKind::Edge => stats.edges += 1,
                DocKind::Community => stats.communities += 1,
                DocKind::Web => {}
            }
        }
        stats.documents = sources.len();
        Self::index_in_memory(InMemory {
            docs,
            meta: MetaTable::default(),
            stats,
            description: None,
            origin: None,
        })
    }
}

#[cfg(test)]
#[path = "in_memory_tests.rs"]
mod tests;
