//! Why a passage ranked where it did: its place in each ranking, the weights fusion gave them,
//! its fused score and the rule that kept it ([`Ranking`]), as `kb search --explain` shows
//! (what Elasticsearch's `explain` and Vespa's match features give their users).
use serde::{Deserialize, Serialize};

/// The rule that put a passage among those returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeptBy {
    /// Its rank earned the place: its fused rank (its BM25 rank without vectors).
    Rank,
    /// The clear BM25 lead, kept whatever its fused rank.
    Bm25Lead,
    /// The vector ranking's first, kept whatever its fused rank.
    VectorLead,
    /// A relation or community of an entity the query matched, merged in beside the hits.
    GraphNeighbour,
}

impl KeptBy {
    /// The rule's name, as `--explain` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            KeptBy::Rank => "rank",
            KeptBy::Bm25Lead => "bm25_lead",
            KeptBy::VectorLead => "vector_lead",
            KeptBy::GraphNeighbour => "graph_neighbour",
        }
    }
}

/// One ranking's view of a passage: its rank (from 1) and score there.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Place {
    /// From 1.
    pub rank: u32,
    /// BM25's score, or the vectors' cosine similarity.
    pub score: f32,
}

/// The weights of the rankings in a fusion: BM25's is `lead × agreement` (how far its first
/// hit stands out, times the share of its first hits' documents the vectors found too); the
/// vectors' is 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Weights {
    /// BM25's weight: `bm25_lead × agreement` (the clear BM25 lead's own term weighs
    /// `bm25_lead`).
    pub bm25: f32,
    /// How far BM25's first hit stands out (0 to 2).
    pub bm25_lead: f32,
    /// The share of BM25's first hits whose documents the vectors found too (0 to 1).
    pub agreement: f32,
    /// The vectors' weight (1).
    pub vector: f32,
}

/// How a returned passage ranked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranking {
    /// Its place in the BM25 ranking; `None` when BM25 did not find it.
    pub bm25: Option<Place>,
    /// Its place in the vector ranking; `None` without vectors or when they did not find it.
    pub vector: Option<Place>,
    /// The weights of the fusion; `None` for a search by BM25 alone.
    pub weights: Option<Weights>,
    /// Its score in the fused ranking (its BM25 score without vectors).
    pub score: f32,
    /// Its rank in the fused ranking (its BM25 rank without vectors), before the keep rules,
    /// from 1; `None` for a graph neighbour, which no ranking holds.
    pub rank: Option<u32>,
    /// The rule that kept it.
    pub kept_by: KeptBy,
}

impl Ranking {
    /// A search by BM25 alone: its `rank` (from 1) and `score` there, kept by its rank.
    pub fn bm25(rank: u32, score: f32) -> Self {
        Ranking {
            bm25: Some(Place { rank, score }),
            vector: None,
            weights: None,
            score,
            rank: Some(rank),
            kept_by: KeptBy::Rank,
        }
    }

    /// A graph neighbour's: no ranking holds it; `score` is the one it was merged in with.
    pub fn graph_neighbour(score: f32) -> Self {
        Ranking {
            bm25: None,
            vector: None,
            weights: None,
            score,
            rank: None,
            kept_by: KeptBy::GraphNeighbour,
        }
    }
}
