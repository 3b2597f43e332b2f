//! A knowledge base built in memory by ingest, for search to open: the sample compiled into the
//! binary, a `KB_PATH` folder (sources read and indexed at load, or a bundle opened as is), or
//! documents a caller already has. Ingest reads and indexes; search's
//! [`KnowledgeBase::in_memory`] opens the result.
//!
//! These constructors are `KnowledgeBase`'s (`KnowledgeBase::embedded()`, `load`,
//! `from_documents`), defined here because they read source documents, which search never does.
use super::bundle::hash::{content_hash, with_metadata};
use super::bundle::index::build_in_ram;
use super::describe;
use super::sources::{self, Corpus, SourceFile};
use crate::search::format::metadata::MetaTable;
use crate::search::format::{KbStats, MANIFEST};
#[cfg(test)]
use crate::search::DocKind;
use crate::search::{Document, KnowledgeBase, RetrievalError};
#[cfg(test)]
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The `kb/` sample, compiled in: (relative path, text).
const EMBEDDED: &[(&str, &str)] = &[
    (
        "communities.jsonl",
        include_str!("../../kb/communities.jsonl"),
    ),
    ("edges.jsonl", include_str!("../../kb/edges.jsonl")),
    ("fruit-borer.md", include_str!("../../kb/fruit-borer.md")),
    ("fruit-rot.md", include_str!("../../kb/fruit-rot.md")),
    (
        "integrated-pest-management.md",
        include_str!("../../kb/integrated-pest-management.md"),
    ),
    (
        "leaf-spot-and-anthracnose.md",
        include_str!("../../kb/leaf-spot-and-anthracnose.md"),
    ),
    ("mealybugs.md", include_str!("../../kb/mealybugs.md")),
    ("nodes.jsonl", include_str!("../../kb/nodes.jsonl")),
    ("patch-canker.md", include_str!("../../kb/patch-canker.md")),
    ("pink-disease.md", include_str!("../../kb/pink-disease.md")),
    ("psyllid.md", include_str!("../../kb/psyllid.md")),
    (
        "root-rot-and-stem-canker.md",
        include_str!("../../kb/root-rot-and-stem-canker.md"),
    ),
    ("seed-borer.md", include_str!("../../kb/seed-borer.md")),
    ("stem-borer.md", include_str!("../../kb/stem-borer.md")),
];

impl KnowledgeBase {
    /// The sample knowledge base compiled into the binary (durian pests and diseases).
    pub fn embedded() -> Result<Self, RetrievalError> {
        let root = Path::new("<embedded kb>");
        let files: Vec<SourceFile> = EMBEDDED
            .iter()
            .map(|(rel, text)| SourceFile::text(root.join(rel), rel, (*text).to_owned()))
            .collect();
        let corpus = sources::build(root, &files, Vec::new())?;
        from_corpus(corpus, None)
    }

    /// Loads a folder: a previous `bounded-rag ingest` output (a bundle) is opened as is (no
    /// re-indexing); any other folder is read and indexed in memory.
    pub fn load(path: &Path) -> Result<Self, RetrievalError> {
        let meta = std::fs::metadata(path).map_err(|e| RetrievalError::io(path, e))?;
        if !meta.is_dir() {
            return Err(RetrievalError::Invalid {
                path: path.to_path_buf(),
                message: "not a folder".into(),
            });
        }
        if path.join(MANIFEST).is_file() {
            return Self::open(path);
        }
        let corpus = sources::load_dir(path)?;
        from_corpus(corpus, Some(path.to_path_buf()))
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
        in_ram(docs, MetaTable::default(), stats, None)
    }
}

/// The corpus indexed in memory; `origin` is the folder it was read from.
fn from_corpus(corpus: Corpus, origin: Option<PathBuf>) -> Result<KnowledgeBase, RetrievalError> {
    in_ram(&corpus.docs, corpus.meta, corpus.stats, origin)
}

/// `docs` indexed in memory, versioned by their content hash (and metadata), opened by search.
fn in_ram(
    docs: &[Document],
    meta: MetaTable,
    stats: KbStats,
    origin: Option<PathBuf>,
) -> Result<KnowledgeBase, RetrievalError> {
    let index = build_in_ram(docs)?;
    let version = with_metadata(content_hash(docs, None), &meta);
    let description = describe::derive(docs);
    Ok(KnowledgeBase::in_memory(
        index,
        docs,
        meta,
        stats,
        version,
        description,
        origin,
    ))
}

#[cfg(test)]
#[path = "in_memory_tests.rs"]
mod tests;
