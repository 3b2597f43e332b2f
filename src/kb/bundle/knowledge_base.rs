//! The knowledge base: documents, entities, relations and communities in one BM25 index,
//! built once (by ingest, at ingest or at init) and searched per request.
//!
//! Search opens what ingest built, and never reads a source document:
//! - a bundle folder written by ingest, opened without re-indexing
//!   ([`KnowledgeBase::open`]);
//! - a bundle published to S3, through [`super::live::LiveKnowledge`];
//! - an index ingest has just built in memory ([`KnowledgeBase::in_memory`]): the compiled-in
//!   sample, a `KB_PATH` folder of sources, documents given by the caller. Those constructors
//!   (`KnowledgeBase::embedded`, `load`, `from_documents`) read and index, so they live in
//!   ingest (`ingest::in_memory`).
//!
//! Every knowledge base has a version: its content hash (see `kb::bundle::hash`).
//!
//! Searches add the one-hop neighbourhood of the entities a query matches (see
//! [`crate::search::knowledge_graph`]); the entity graph is built with the knowledge base, never per
//! request.
use super::format::VECTORS_FILE;
use super::open::{self, Opened};
use crate::config::DEFAULT_MAX_PASSAGES_PER_DOCUMENT;
use crate::kb::retriever::{Explained, Retriever};
use crate::knowledge::Document;
use crate::knowledge::EmbeddingInfo;
use crate::knowledge::KbStats;
use crate::knowledge::MetaTable;
use crate::search::KnowledgeGraph;
use crate::search::RetrievalError;
use crate::search::RetrievalOptions;
use crate::search::SearchIndex;
use crate::search::Vectors;
use async_trait::async_trait;
use std::fmt;
use std::path::{Path, PathBuf};
use tantivy::DocId;

/// The knowledge base, indexed once at load; cheap to search from many requests at once.
pub struct KnowledgeBase {
    pub(super) index: SearchIndex,
    pub(super) graph: KnowledgeGraph,
    pub(super) vectors: Option<Vectors>,
    embedding: Option<EmbeddingInfo>,
    pub(super) meta: MetaTable,
    pub(super) stats: KbStats,
    version: String,
    /// What it covers, for the router (see [`Retriever::description`]).
    description: Option<String>,
    origin: Option<PathBuf>,
    /// Most passages of one document in a result list (0: no cap); see `search::cap`.
    pub(super) max_per_document: usize,
}

impl fmt::Debug for KnowledgeBase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KnowledgeBase")
            .field("origin", &self.origin)
            .field("version", &self.version)
            .field("stats", &self.stats)
            .field("embedding", &self.embedding)
            .finish_non_exhaustive()
    }
}

impl KnowledgeBase {
    /// A knowledge base over `index`, which ingest has just built in memory from `docs` (in
    /// index order; the entity graph is built from them), with its metadata, counts and version.
    pub(crate) fn in_memory(
        index: SearchIndex,
        docs: &[Document],
        meta: MetaTable,
        stats: KbStats,
        version: String,
        description: Option<String>,
        origin: Option<PathBuf>,
    ) -> Self {
        let positions = (0..).zip(docs);
        Self {
            index,
            graph: KnowledgeGraph::build(positions),
            vectors: None,
            embedding: None,
            version,
            description,
            meta,
            stats,
            origin,
            max_per_document: DEFAULT_MAX_PASSAGES_PER_DOCUMENT,
        }
    }

    /// Opens the bundle in the folder `dir` (an `ingest --out` folder), without re-indexing.
    pub(crate) fn open(dir: &Path) -> Result<Self, RetrievalError> {
        open::open_dir(dir).and_then(Self::assemble)
    }

    /// A knowledge base from an opened bundle, checked against its manifest.
    pub(crate) fn assemble(opened: Opened) -> Result<Self, RetrievalError> {
        let Opened {
            index,
            vectors,
            meta,
            manifest,
            origin,
        } = opened;
        let invalid = |message: String| RetrievalError::Invalid {
            path: origin.clone(),
            message,
        };
        if index.num_docs() != manifest.counts.indexed() as u64 {
            return Err(invalid(format!(
                "the index holds {} items but the manifest says {}; re-run ingest",
                index.num_docs(),
                manifest.counts.indexed()
            )));
        }
        let vectors = match (&manifest.embedding, vectors) {
            (None, _) => None,
            (Some(e), Some(bytes)) => {
                let rows = manifest.counts.passages;
                Some(Vectors::decode(bytes, e.dimensions, rows).ok_or_else(|| {
                    invalid(format!(
                        "{} is not {rows} vectors of {} dimensions",
                        VECTORS_FILE, e.dimensions
                    ))
                })?)
            }
            (Some(_), None) => {
                return Err(invalid(format!(
                    "the manifest names an embedding model but {} is missing",
                    VECTORS_FILE
                )))
            }
        };
        // Ingest writes passages first, then nodes, edges and communities.
        let graph_docs = (manifest.counts.passages as DocId..index.num_docs() as DocId)
            .map(|id| Ok((id, index.document(id, 0.0)?)))
            .collect::<Result<Vec<_>, RetrievalError>>()?;
        let graph = KnowledgeGraph::build(graph_docs.iter().map(|(id, doc)| (*id, doc)));
        Ok(Self {
            index,
            graph,
            vectors,
            embedding: manifest.embedding.clone(),
            meta,
            stats: manifest.counts,
            version: manifest.content_hash.clone(),
            description: manifest.description.clone(),
            origin: Some(origin),
            max_per_document: DEFAULT_MAX_PASSAGES_PER_DOCUMENT,
        })
    }

    /// Caps the passages of one source document in every result list
    /// (`KB_MAX_PASSAGES_PER_DOCUMENT`; default `config::DEFAULT_MAX_PASSAGES_PER_DOCUMENT`,
    /// 0 = no cap), so near-duplicate and long documents do not crowd the top k.
    pub(crate) fn with_max_passages_per_document(mut self, max: usize) -> Self {
        self.max_per_document = max;
        self
    }

    /// What the knowledge base holds.
    pub fn stats(&self) -> KbStats {
        self.stats
    }

    /// Number of indexed items (passages, nodes, edges, communities).
    pub fn len(&self) -> usize {
        self.index.num_docs() as usize
    }

    /// Whether nothing is indexed (never true for a loaded folder).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The folder (or `s3://` location) it was loaded from; `None` for the embedded sample.
    pub(crate) fn origin(&self) -> Option<&Path> {
        self.origin.as_deref()
    }

    /// The version: the content hash of what is indexed (and of the embedding model).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// What it covers, for the router: the bundle's recorded description, or the one derived
    /// from the documents of a knowledge base read in memory.
    pub(crate) fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The embedding model of the passages' vectors; `None` without vectors.
    pub(crate) fn embedding(&self) -> Option<&EmbeddingInfo> {
        self.embedding.as_ref()
    }

    /// The metadata keys documents carry (what filters can test), sorted.
    pub fn metadata_keys(&self) -> Vec<String> {
        self.meta.keys()
    }
}

#[async_trait]
impl Retriever for KnowledgeBase {
    async fn retrieve(
        &self,
        query: &str,
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        // A sub-millisecond in-memory search: no need to leave the async task.
        self.search(query, options)
    }

    async fn retrieve_hybrid(
        &self,
        query: &str,
        vector: &[f32],
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        self.search_hybrid(query, vector, options)
    }

    async fn explain(
        &self,
        query: &str,
        vector: Option<&[f32]>,
        options: &RetrievalOptions,
    ) -> Result<Vec<Explained>, RetrievalError> {
        self.search_explained(query, vector, options)
    }

    fn embedding(&self) -> Option<EmbeddingInfo> {
        self.embedding.clone()
    }

    fn version(&self) -> Option<String> {
        Some(self.version.clone())
    }

    fn description(&self) -> Option<String> {
        self.description.clone()
    }
}
