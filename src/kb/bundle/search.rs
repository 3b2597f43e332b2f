//! Searching one opened bundle: BM25 ([`KnowledgeBase::search`]), BM25 fused with the
//! passages' vectors ([`KnowledgeBase::search_hybrid`], `search::hybrid`'s fusion and keep
//! rules), each with the one-hop graph neighbourhood of the entities the query matched merged
//! in, and either with each passage's [`Ranking`] ([`KnowledgeBase::search_explained`]).
use super::KnowledgeBase;
use crate::kb::retriever::Explained;
use crate::knowledge::Document;
use crate::search::per_source;
use crate::search::Allowed;
use crate::search::Hit;
use crate::search::Ranking;
use crate::search::RetrievalError;
use crate::search::RetrievalOptions;
use crate::search::{clear_lead, fuse, near_sources, rank_of, Fusion};
use crate::search::{strong_by_rank, strong_by_score, Merged};
use std::collections::HashMap;
use tantivy::DocId;

/// Candidates taken from each ranking before fusion.
const FUSION_CANDIDATES: usize = 50;

/// The direct hits of one search with how each ranked, the vector ranking's first documents
/// and the BM25 hits the graph's entities are matched from.
struct Hits {
    ranked: Vec<(Hit, Ranking)>,
    clear: Vec<DocId>,
    near: Vec<u64>,
    matched: Vec<Hit>,
    strong: usize,
}

impl KnowledgeBase {
    /// The positions `options.filter` lets through; `None` without a filter.
    fn allowed(&self, options: &RetrievalOptions) -> Option<Allowed> {
        let filter = options.filter.as_ref()?;
        Some(Allowed::of(&self.meta, filter, self.len()))
    }

    /// Synchronous search: at most `options.limit` documents of the enabled kinds, best first,
    /// scored by BM25, with the one-hop neighbourhood of the matched entities merged in (see
    /// [`crate::search::knowledge_graph`]). The first is a clear match when it leads the best
    /// hit of another document clearly. Never fails on user punctuation.
    pub fn search(
        &self,
        query: &str,
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        Ok(strip(self.search_explained(query, None, options)?))
    }

    /// Hybrid search: reciprocal rank fusion of BM25 over the enabled kinds and the similarity
    /// of the passages' vectors to `vector` (when passages are enabled), the clear BM25 lead and
    /// the vector ranking's first kept whatever their fused rank (`search::hybrid`). Scores are
    /// fused scores; graph neighbours are merged in as in [`KnowledgeBase::search`]. Without
    /// vectors, the same as [`KnowledgeBase::search`].
    pub fn search_hybrid(
        &self,
        query: &str,
        vector: &[f32],
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        Ok(strip(self.search_explained(
            query,
            Some(vector),
            options,
        )?))
    }

    /// [`KnowledgeBase::search_hybrid`] (with `vector`) or [`KnowledgeBase::search`] (without,
    /// or when the bundle has no vectors), each document with how it ranked.
    pub(crate) fn search_explained(
        &self,
        query: &str,
        vector: Option<&[f32]>,
        options: &RetrievalOptions,
    ) -> Result<Vec<Explained>, RetrievalError> {
        if options.limit == 0 {
            return Ok(Vec::new());
        }
        let allowed = self.allowed(options);
        let hits = match (vector, &self.vectors) {
            (Some(vector), Some(_)) => self.hybrid_hits(query, vector, options, allowed.as_ref()),
            _ => self.bm25_hits(query, options, allowed.as_ref()),
        }?;
        let direct: Vec<Hit> = hits.ranked.iter().map(|(hit, _)| *hit).collect();
        let merged = self.graph.expand(
            &direct,
            &hits.matched,
            hits.strong,
            options,
            allowed.as_ref(),
        );
        let rankings: HashMap<DocId, Ranking> = hits
            .ranked
            .into_iter()
            .map(|((id, _), ranking)| (id, ranking))
            .collect();
        self.documents(merged, &hits.clear, &hits.near, &rankings)
    }

    fn bm25_hits(
        &self,
        query: &str,
        options: &RetrievalOptions,
        allowed: Option<&Allowed>,
    ) -> Result<Hits, RetrievalError> {
        // Enough candidates to fill the list under the per-document cap, and to find the best
        // hit of another document than the first's, which the first must lead clearly (the
        // capped list may hold none: two passages of one document, then the limit).
        let raw = self.index.hits(
            query,
            options,
            FUSION_CANDIDATES.max(options.limit),
            allowed,
        )?;
        let clear: Vec<DocId> = clear_lead(&raw, |id| self.index.source(id))
            .into_iter()
            .collect();
        let hits = per_source(
            raw,
            |h| self.index.source(h.0),
            self.max_per_document,
            options.limit,
        );
        let direct = &hits[..];
        let ranked = (1..)
            .zip(direct)
            .map(|(rank, hit)| (*hit, Ranking::bm25(rank, hit.1)))
            .collect();
        Ok(Hits {
            ranked,
            clear,
            near: Vec::new(),
            matched: direct.to_vec(),
            strong: strong_by_score(direct),
        })
    }

    fn hybrid_hits(
        &self,
        query: &str,
        vector: &[f32],
        options: &RetrievalOptions,
        allowed: Option<&Allowed>,
    ) -> Result<Hits, RetrievalError> {
        let vectors = self
            .vectors
            .as_ref()
            .expect("hybrid_hits: a bundle with vectors");
        let candidates = FUSION_CANDIDATES.max(options.limit);
        let bm25 = self.index.hits(query, options, candidates, allowed)?;
        let nearest = if options.episodes {
            vectors.top(vector, candidates, allowed)
        } else {
            Vec::new()
        };
        let fusion: Fusion<DocId> = fuse(&bm25, &nearest, |id| self.index.source(id));
        let selected = fusion.select(options.limit, self.max_per_document);
        let clear = selected
            .iter()
            .filter(|s| s.candidate.clear)
            .map(|s| s.candidate.key)
            .collect();
        let ranked = selected
            .iter()
            .map(|s| ((s.candidate.key, s.candidate.score), s.ranking(&fusion)))
            .collect();
        Ok(Hits {
            ranked,
            clear,
            near: near_sources(nearest.iter().map(|h| self.index.source(h.0))),
            matched: bm25,
            strong: strong_by_rank(options.limit),
        })
    }

    /// The merged results as documents, the direct hits in `clear` marked as clear matches and
    /// those of a source in `near` (the vector ranking's first documents, in order) with their
    /// document's vector rank; each with its ranking (a graph neighbour's says so).
    fn documents(
        &self,
        merged: Vec<Merged>,
        clear: &[DocId],
        near: &[u64],
        rankings: &HashMap<DocId, Ranking>,
    ) -> Result<Vec<Explained>, RetrievalError> {
        merged
            .into_iter()
            .map(|(id, score, from_graph)| {
                let mut doc = self.index.document(id, score)?;
                doc.from_graph = from_graph;
                doc.clear_match = !from_graph && clear.contains(&id);
                doc.vector_rank = rank_of(near, self.index.source(id)).filter(|_| !from_graph);
                let ranking = match rankings.get(&id) {
                    Some(r) if !from_graph => r.clone(),
                    _ => Ranking::graph_neighbour(score),
                };
                Ok(Explained {
                    document: doc,
                    ranking: Some(ranking),
                })
            })
            .collect()
    }
}

/// The documents alone.
fn strip(explained: Vec<Explained>) -> Vec<Document> {
    explained.into_iter().map(|e| e.document).collect()
}
