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
use super::format::{EmbeddingInfo, KbStats, VECTORS_FILE};
use super::open::{self, Opened};
use crate::config::DEFAULT_MAX_PASSAGES_PER_DOCUMENT;
use crate::kb::retriever::Retriever;
use crate::search::allowed::Allowed;
use crate::search::bm25::{Hit, SearchIndex};
use crate::search::cap;
use crate::search::document::Document;
use crate::search::hybrid::{
    bm25_clear_lead, fuse, keep_leads, near_sources, rank_of, Fused, Vectors,
};
use crate::search::knowledge_graph::{self as graph, KnowledgeGraph, Merged};
use crate::search::meta_table::MetaTable;
use crate::search::options::RetrievalOptions;
use crate::search::RetrievalError;
use async_trait::async_trait;
use std::fmt;
use std::path::{Path, PathBuf};
use tantivy::DocId;

/// Candidates taken from each ranking before fusion.
const FUSION_CANDIDATES: usize = 50;

/// The knowledge base, indexed once at load; cheap to search from many requests at once.
pub struct KnowledgeBase {
    index: SearchIndex,
    graph: KnowledgeGraph,
    vectors: Option<Vectors>,
    embedding: Option<EmbeddingInfo>,
    meta: MetaTable,
    stats: KbStats,
    version: String,
    /// What it covers, for the router (see [`Retriever::description`]).
    description: Option<String>,
    origin: Option<PathBuf>,
    /// Most passages of one document in a result list (0: no cap); see [`cap`].
    max_per_document: usize,
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

    /// The positions `options.filter` lets through; `None` without a filter.
    fn allowed(&self, options: &RetrievalOptions) -> Option<Allowed> {
        let filter = options.filter.as_ref()?;
        Some(Allowed::of(&self.meta, filter, self.len()))
    }

    /// Synchronous search: at most `options.limit` documents of the enabled kinds, best first,
    /// scored by BM25, with the one-hop neighbourhood of the matched entities merged in (see
    /// [`crate::search::knowledge_graph`]). The first is a clear match when it leads the second
    /// clearly. Never fails on user punctuation.
    pub fn search(
        &self,
        query: &str,
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        // Enough candidates to fill the list under the per-document cap, and one more hit
        // than asked, to see whether the first one leads.
        let wanted = options.limit.saturating_add(1);
        let allowed = self.allowed(options);
        let hits = self.capped(
            self.index
                .hits(query, options, self.candidates(wanted), allowed.as_ref())?,
            wanted,
        );
        let clear: Vec<DocId> = self.clear_lead(&hits).into_iter().collect();
        let direct = &hits[..hits.len().min(options.limit)];
        let strong = graph::strong_by_score(direct);
        let merged = self
            .graph
            .expand(direct, direct, strong, options, allowed.as_ref());
        self.documents(merged, &clear, &[])
    }

    /// The first hit when it leads clearly ([`bm25_clear_lead`]) over the best hit of any
    /// other document: a second passage of the same document, or of a document with the same
    /// text, does not make the first one less of a match.
    fn clear_lead(&self, hits: &[Hit]) -> Option<DocId> {
        let first = hits.first()?;
        let source = self.index.source(first.0);
        let other = hits.iter().find(|h| self.index.source(h.0) != source);
        bm25_clear_lead(
            &[*first]
                .into_iter()
                .chain(other.copied())
                .collect::<Vec<_>>(),
        )
        .then_some(first.0)
    }

    /// How many hits to rank so that `wanted` remain after the per-document cap.
    fn candidates(&self, wanted: usize) -> usize {
        if self.max_per_document == 0 {
            wanted
        } else {
            FUSION_CANDIDATES.max(wanted)
        }
    }

    /// The first `limit` hits, at most `max_per_document` per source document.
    fn capped(&self, hits: Vec<Hit>, limit: usize) -> Vec<Hit> {
        cap::per_source(
            hits,
            |h| self.index.source(h.0),
            self.max_per_document,
            limit,
        )
    }

    /// Hybrid search: reciprocal rank fusion of BM25 over the enabled kinds and the similarity
    /// of the passages' vectors to `vector` (when passages are enabled). Scores are fused
    /// scores; graph neighbours are merged in as in [`KnowledgeBase::search`]. Without vectors,
    /// the same as [`KnowledgeBase::search`].
    pub fn search_hybrid(
        &self,
        query: &str,
        vector: &[f32],
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        let Some(vectors) = self.vectors.as_ref() else {
            return self.search(query, options);
        };
        if options.limit == 0 {
            return Ok(Vec::new());
        }
        let candidates = FUSION_CANDIDATES.max(options.limit);
        let allowed = self.allowed(options);
        let allowed = allowed.as_ref();
        let bm25 = self.index.hits(query, options, candidates, allowed)?;
        let nearest = if options.episodes {
            vectors.top(vector, candidates, allowed)
        } else {
            Vec::new()
        };
        let all = fuse(&bm25, &nearest, candidates, |id| self.index.source(id));
        let lead = self.clear_lead(&bm25);
        let kept = cap::per_source(
            all.iter().copied(),
            |f| self.index.source(f.id),
            self.max_per_document,
            options.limit,
        );
        let lead_fused = all
            .iter()
            .find(|f| Some(f.id) == lead)
            .map(|f| Fused { clear: true, ..*f });
        // The vector ranking's first passage, as fused (it is among the fused candidates
        // unless all of them outscore it).
        let nearest_fused = nearest
            .first()
            .and_then(|h| all.iter().find(|f| f.id == h.0))
            .copied();
        let source = |f: &Fused| self.index.source(f.id);
        let leads = lead_fused.into_iter().chain(nearest_fused);
        let fused = keep_leads(kept, leads, source, options.limit);
        let clear: Vec<DocId> = fused
            .iter()
            .filter(|f| f.clear || Some(f.id) == lead)
            .map(|f| f.id)
            .collect();
        let hits: Vec<Hit> = fused.iter().map(|f| (f.id, f.score)).collect();
        let strong = graph::strong_by_rank(options.limit);
        let merged = self.graph.expand(&hits, &bm25, strong, options, allowed);
        let near = near_sources(nearest.iter().map(|h| self.index.source(h.0)));
        self.documents(merged, &clear, &near)
    }

    /// The merged results as documents, the direct hits in `clear` marked as clear matches and
    /// those of a source in `near` (the vector ranking's first documents, in order) with their
    /// document's vector rank.
    fn documents(
        &self,
        merged: Vec<Merged>,
        clear: &[DocId],
        near: &[u64],
    ) -> Result<Vec<Document>, RetrievalError> {
        merged
            .into_iter()
            .map(|(id, score, from_graph)| {
                let mut doc = self.index.document(id, score)?;
                doc.from_graph = from_graph;
                doc.clear_match = !from_graph && clear.contains(&id);
                doc.vector_rank = rank_of(near, self.index.source(id)).filter(|_| !from_graph);
                Ok(doc)
            })
            .collect()
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
