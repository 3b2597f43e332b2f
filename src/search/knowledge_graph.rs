//! The entity graph of a knowledge base: for every entity, its relations (edges) and its
//! communities, so a search that matches an entity can add its one-hop neighbourhood.
//!
//! Built once, when a knowledge base is built or opened, from the graph documents themselves:
//! an edge's id is `source|relation|target` (entity ids), and a community's content ends with
//! `Members: name, name, ...` (entity names, or ids when the entity is unknown), as written by
//! the JSONL source reader. A bundle therefore needs no extra file.
//!
//! The rule at search time ([`KnowledgeGraph::expand`]):
//! - the matched entities are the [`SEEDS`] best node documents among the query's BM25 hits:
//!   the direct hits of a BM25 search, the BM25 candidates of a hybrid one (the vectors rank
//!   passages only). Nothing is expanded when nodes are not searched;
//! - their neighbours are, seed by seed, their edges (when edges are searched), then their
//!   communities (when communities are searched), each once and never one already among the hits;
//! - the strong direct hits keep their places at the top, the neighbours follow, then the
//!   weaker direct hits, cut to the limit. By BM25, strong hits score at least
//!   [`STRONG_SHARE`] of the first one's score ([`strong_by_score`]); fused (hybrid) scores
//!   only reflect ranks, so there the first half of the limit is strong ([`strong_by_rank`]).
use super::allowed::Allowed;
use super::bm25::Hit;
use super::options::RetrievalOptions;
use crate::knowledge::{DocKind, Document};
use std::collections::{HashMap, HashSet};
use tantivy::DocId;

/// How many matched entities are expanded.
pub(crate) const SEEDS: usize = 2;

/// Direct hits scoring at least this share of the first hit's score stay above the neighbours.
pub(crate) const STRONG_SHARE: f32 = 0.5;

/// The marker before a community's member list in its content.
const MEMBERS: &str = "\nMembers: ";

/// One entity's neighbourhood, by corpus position.
#[derive(Debug, Default)]
struct Around {
    edges: Vec<DocId>,
    communities: Vec<DocId>,
}

/// Entity → relations and communities, keyed by the entity's node document.
#[derive(Debug, Default)]
pub(crate) struct KnowledgeGraph {
    around: HashMap<DocId, Around>,
}

/// One merged result: a corpus position, its score, and whether the graph added it.
pub(crate) type Merged = (DocId, f32, bool);

impl KnowledgeGraph {
    /// The graph of the given documents (with their corpus positions); other kinds are ignored.
    pub(crate) fn build<'a>(docs: impl IntoIterator<Item = (DocId, &'a Document)>) -> Self {
        let mut graph = KnowledgeGraph::default();
        let mut by_id: HashMap<&str, DocId> = HashMap::new();
        let mut by_name: HashMap<&str, Vec<DocId>> = HashMap::new();
        let mut edges = Vec::new();
        let mut communities = Vec::new();
        for (pos, doc) in docs {
            match doc.kind {
                DocKind::Node => {
                    graph.around.insert(pos, Around::default());
                    by_id.insert(&doc.id, pos);
                    by_name.entry(&doc.title).or_default().push(pos);
                }
                DocKind::Edge => edges.push((pos, doc)),
                DocKind::Community => communities.push((pos, doc)),
                DocKind::Episode | DocKind::Web => {}
            }
        }
        for (pos, edge) in edges {
            let ends = edge
                .id
                .split_once('|')
                .zip(edge.id.rsplit_once('|'))
                .map(|((source, _), (_, target))| [source, target]);
            let mut seen = Vec::new();
            for node in ends.into_iter().flatten().filter_map(|e| by_id.get(e)) {
                if !seen.contains(node) {
                    seen.push(*node);
                    graph.around.entry(*node).or_default().edges.push(pos);
                }
            }
        }
        for (pos, community) in communities {
            let mut seen = HashSet::new();
            for name in members(&community.content, &by_name, &by_id) {
                let nodes = by_name.get(name).cloned().unwrap_or_default();
                let nodes = nodes.into_iter().chain(by_id.get(name).copied());
                for node in nodes.filter(|n| seen.insert(*n)) {
                    graph.around.entry(node).or_default().communities.push(pos);
                }
            }
        }
        graph
    }

    /// Merges the direct hits (best first, at most `options.limit` of them used) with the
    /// neighbourhood of the best entities among `matched` (the BM25 hits, best first), by the
    /// rule in the module docs. Neighbours outside `allowed` (when given) are left out.
    pub(crate) fn expand(
        &self,
        hits: &[Hit],
        matched: &[Hit],
        strong: usize,
        options: &RetrievalOptions,
        allowed: Option<&Allowed>,
    ) -> Vec<Merged> {
        let direct = &hits[..hits.len().min(options.limit)];
        let mut taken: HashSet<DocId> = direct.iter().map(|(id, _)| *id).collect();
        let mut neighbours = Vec::new();
        let seeds = matched
            .iter()
            .filter_map(|(id, _)| self.around.get(id))
            .take(if options.nodes { SEEDS } else { 0 });
        for around in seeds {
            let edges = around.edges.iter().filter(|_| options.edges);
            let communities = around.communities.iter().filter(|_| options.communities);
            for id in edges.chain(communities) {
                if Allowed::permits(allowed, *id) && taken.insert(*id) {
                    neighbours.push(*id);
                }
            }
        }
        let (strong, weak) = direct.split_at(strong.min(direct.len()));
        // A neighbour is scored as the weakest strong hit: it ranks right below them.
        let floor = strong.last().map_or(0.0, |(_, score)| *score);
        strong
            .iter()
            .map(|&(id, score)| (id, score, false))
            .chain(neighbours.into_iter().map(|id| (id, floor, true)))
            .chain(weak.iter().map(|&(id, score)| (id, score, false)))
            .take(options.limit)
            .collect()
    }
}

/// How many of the direct BM25 hits (best first) score at least [`STRONG_SHARE`] of the first.
pub(crate) fn strong_by_score(hits: &[Hit]) -> usize {
    strong_count(hits.iter().map(|(_, score)| *score))
}

/// How many of `scores` (best first) are at least [`STRONG_SHARE`] of the first.
pub(crate) fn strong_count(scores: impl IntoIterator<Item = f32>) -> usize {
    let mut scores = scores.into_iter().peekable();
    let top = scores.peek().copied().unwrap_or(0.0);
    scores
        .take_while(|score| *score >= STRONG_SHARE * top)
        .count()
}

/// How many fused hits stay above the neighbours: the first half of the limit, rounded up.
pub(crate) fn strong_by_rank(limit: usize) -> usize {
    limit.div_ceil(2)
}

/// The member names of a community's content (`...\nMembers: a, b, c.`). Names may contain
/// commas: pieces are joined until they make a known name or id.
fn members<'a>(
    content: &'a str,
    by_name: &HashMap<&str, Vec<DocId>>,
    by_id: &HashMap<&str, DocId>,
) -> Vec<&'a str> {
    let Some((_, list)) = content.rsplit_once(MEMBERS) else {
        return Vec::new();
    };
    let list = list.strip_suffix('.').unwrap_or(list);
    let known = |s: &str| by_name.contains_key(s) || by_id.contains_key(s);
    let mut out = Vec::new();
    let mut start = 0;
    let mut from = 0;
    while from <= list.len() {
        let end = list[from..].find(", ").map_or(list.len(), |i| from + i);
        let piece = &list[start..end];
        if known(piece) || end == list.len() {
            out.push(piece);
            start = end + 2;
        }
        from = end + 2;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::fixtures::{all, doc};

    fn sample() -> KnowledgeGraph {
        let docs = [
            doc("p1", "Passage", "text", DocKind::Episode),
            doc("a", "Alpha, the first", "x", DocKind::Node),
            doc("b", "Beta", "x", DocKind::Node),
            doc("a|r|b", "Alpha — r — Beta", "f", DocKind::Edge),
            doc("b|s|b", "Beta — s — Beta", "f", DocKind::Edge),
            doc(
                "c",
                "C",
                "s\nMembers: Alpha, the first, Beta.",
                DocKind::Community,
            ),
        ];
        KnowledgeGraph::build(docs.iter().enumerate().map(|(i, d)| (i as DocId, d)))
    }

    #[test]
    fn edges_and_communities_attach_to_their_entities() {
        let graph = sample();
        assert_eq!(graph.around[&1].edges, [3]);
        assert_eq!(graph.around[&2].edges, [3, 4], "a self-loop counts once");
        assert_eq!(graph.around[&1].communities, [5], "names may hold commas");
        assert_eq!(graph.around[&2].communities, [5]);
    }

    #[test]
    fn neighbours_follow_strong_hits_and_respect_toggles_and_limit() {
        let graph = sample();
        let hits = [(1, 10.0), (0, 9.0), (2, 1.0)];
        let merged = graph.expand(&hits, &hits, strong_by_score(&hits), &all(10), None);
        let ids: Vec<(DocId, bool)> = merged.iter().map(|m| (m.0, m.2)).collect();
        assert_eq!(
            ids,
            [
                (1, false),
                (0, false),
                (3, true),
                (5, true),
                (4, true),
                (2, false)
            ]
        );
        assert_eq!(
            graph
                .expand(&hits, &hits, strong_by_score(&hits), &all(3), None)
                .len(),
            3
        );
        let no_edges = RetrievalOptions {
            edges: false,
            ..all(10)
        };
        let merged = graph.expand(&hits, &hits, strong_by_score(&hits), &no_edges, None);
        assert!(merged.iter().all(|m| m.0 != 3 && m.0 != 4));
        let no_nodes = RetrievalOptions {
            nodes: false,
            ..all(10)
        };
        assert_eq!(
            graph
                .expand(&hits, &hits, strong_by_score(&hits), &no_nodes, None)
                .len(),
            3
        );
        assert!(graph.expand(&[], &[], 0, &all(10), None).is_empty());
        assert_eq!((strong_by_rank(5), strong_by_rank(10)), (3, 5));
    }
}
