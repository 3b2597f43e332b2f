//! The knowledge base: documents, entities, relations and communities in one BM25 index,
//! built once (at ingest or at init) and searched per request.
//!
//! Four ways to get one:
//! - [`KnowledgeBase::embedded`]: the durian pests-and-diseases sample in `kb/`, compiled into
//!   the binary, so the CLI and the Lambda work from any directory with no files;
//! - [`KnowledgeBase::load`] on a folder of sources (`*.md`, `*.markdown`, `*.txt`, `*.html`,
//!   `nodes.jsonl`, `edges.jsonl`, `communities.jsonl`), indexed in memory at load;
//! - [`KnowledgeBase::load`] on a bundle written by [`super::ingest`], opened without
//!   re-indexing;
//! - a bundle published to S3, through [`super::LiveKnowledge`].
//!
//! Every knowledge base has a version: its content hash (see [`super::bundle`]).
//!
//! Searches add the one-hop neighbourhood of the entities a query matches (see
//! [`super::graph`]); the entity graph is built with the knowledge base, never per request.
use super::bm25::{Hit, SearchIndex};
use super::bundle::{self, content_hash, EmbeddingInfo, Opened};
use super::cap::{self, DEFAULT_MAX_PASSAGES_PER_DOCUMENT};
use super::graph::{self, KnowledgeGraph, Merged};
use super::hybrid::{bm25_clear_lead, fuse, Vectors};
use super::layout::{MANIFEST, VECTORS_FILE};
use super::metadata::{Allowed, MetaTable};
use super::sources::{self, SourceFile};
use super::stats::KbStats;
use super::{DocKind, Document, RetrievalError, RetrievalOptions, Retriever};
use async_trait::async_trait;
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use tantivy::DocId;

/// Candidates taken from each ranking before fusion.
const FUSION_CANDIDATES: usize = 50;

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

/// The knowledge base, indexed once at load; cheap to search from many requests at once.
pub struct KnowledgeBase {
    index: SearchIndex,
    graph: KnowledgeGraph,
    vectors: Option<Vectors>,
    embedding: Option<EmbeddingInfo>,
    meta: MetaTable,
    stats: KbStats,
    version: String,
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
    /// The sample knowledge base compiled into the binary (durian pests and diseases).
    pub fn embedded() -> Result<Self, RetrievalError> {
        let root = Path::new("<embedded kb>");
        let files: Vec<SourceFile> = EMBEDDED
            .iter()
            .map(|(rel, text)| SourceFile::text(root.join(rel), rel, (*text).to_owned()))
            .collect();
        let corpus = sources::build(root, &files, Vec::new())?;
        Self::in_ram(&corpus.docs, corpus.meta, corpus.stats, None)
    }

    fn in_ram(
        docs: &[Document],
        meta: MetaTable,
        stats: KbStats,
        origin: Option<PathBuf>,
    ) -> Result<Self, RetrievalError> {
        let positions = (0..).zip(docs);
        Ok(Self {
            index: SearchIndex::build_in_ram(docs)?,
            graph: KnowledgeGraph::build(positions),
            vectors: None,
            embedding: None,
            version: meta.hashed_with(content_hash(docs, None)),
            meta,
            stats,
            origin,
            max_per_document: DEFAULT_MAX_PASSAGES_PER_DOCUMENT,
        })
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
            origin: Some(origin),
            max_per_document: DEFAULT_MAX_PASSAGES_PER_DOCUMENT,
        })
    }

    /// Loads a folder: a previous [`super::ingest_dir`] output is opened as is (no
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
            return bundle::open_dir(path).and_then(Self::assemble);
        }
        let corpus = sources::load_dir(path)?;
        let origin = Some(path.to_path_buf());
        Self::in_ram(&corpus.docs, corpus.meta, corpus.stats, origin)
    }

    /// Indexes the given documents in memory (their `score` is ignored; `Web` documents are
    /// stored but never returned). Handy for tests and callers with their own sources.
    pub fn from_documents(docs: &[Document]) -> Result<Self, RetrievalError> {
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
        Self::in_ram(docs, MetaTable::default(), stats, None)
    }

    /// Caps the passages of one source document in every result list
    /// (`KB_MAX_PASSAGES_PER_DOCUMENT`; default [`DEFAULT_MAX_PASSAGES_PER_DOCUMENT`], 0 = no
    /// cap), so near-duplicate and long documents do not crowd the top k.
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

    /// The embedding model of the passages' vectors; `None` without vectors.
    pub fn embedding(&self) -> Option<&EmbeddingInfo> {
        self.embedding.as_ref()
    }

    /// The metadata keys documents carry (what filters can test), sorted.
    pub fn metadata_keys(&self) -> Vec<String> {
        self.meta.keys()
    }

    /// The positions `options.filter` lets through; `None` without a filter.
    fn allowed(&self, options: &RetrievalOptions) -> Option<Allowed> {
        let filter = options.filter.as_ref()?;
        Some(self.meta.allowed(filter, self.len()))
    }

    /// Synchronous search: at most `options.limit` documents of the enabled kinds, best first,
    /// scored by BM25, with the one-hop neighbourhood of the matched entities merged in (see
    /// [`super::graph`]). The first is a clear match when it leads the second clearly. Never
    /// fails on user punctuation.
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
        self.documents(merged, &clear)
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
        let fused = fuse(&bm25, &nearest, candidates);
        let fused = cap::per_source(
            fused,
            |f| self.index.source(f.id),
            self.max_per_document,
            options.limit,
        );
        let lead = self.clear_lead(&bm25);
        let clear: Vec<DocId> = fused
            .iter()
            .filter(|f| f.clear || Some(f.id) == lead)
            .map(|f| f.id)
            .collect();
        let hits: Vec<Hit> = fused.iter().map(|f| (f.id, f.score)).collect();
        let strong = graph::strong_by_rank(options.limit);
        let merged = self.graph.expand(&hits, &bm25, strong, options, allowed);
        self.documents(merged, &clear)
    }

    /// The merged results as documents, the direct hits in `clear` marked as clear matches.
    fn documents(
        &self,
        merged: Vec<Merged>,
        clear: &[DocId],
    ) -> Result<Vec<Document>, RetrievalError> {
        merged
            .into_iter()
            .map(|(id, score, from_graph)| {
                let mut doc = self.index.document(id, score)?;
                doc.from_graph = from_graph;
                doc.clear_match = !from_graph && clear.contains(&id);
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
}

#[cfg(test)]
#[path = "kb_tests.rs"]
mod tests;
