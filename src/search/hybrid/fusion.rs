//! Reciprocal rank fusion: each document scores `w / (K + rank)` in every ranking it appears
//! in (rank from 1), summed; ties keep the BM25 order. It needs no score calibration between
//! BM25 and cosine similarity, which live on unrelated scales. The vector ranking's weight `w`
//! is 1; the BM25 ranking's is how far its first hit stands out ([`bm25_weight`]): a question
//! whose words single out a few passages is BM25's to rank, one whose words are spread evenly
//! over many (the user's words are not the document's) is the vectors'; times how far its first
//! hits come from documents the vectors found too ([`agreement`]): BM25 hits on pages the
//! vectors never reach are the question's common words matching by chance.
//!
//! A fused passage is a *clear match* when it is in the top [`CLEAR_TOP`] of both rankings,
//! or when it leads BM25 clearly ([`clear_lead`]); such a lead is never ranked out of the
//! passages a request gets, and neither is the vector ranking's first ([`super::leads`]).
//!
//! [`fuse`] ranks every candidate either ranking offered (it never truncates: a lead ranked
//! below every other candidate is still there for the keep rules), generic over the key a
//! store names a passage by, so the bundle and PostgreSQL fuse with this one function.
use crate::search::ranking::Weights;
use std::collections::{HashMap, HashSet};
use std::hash::Hash;

/// The RRF constant: damps the weight of the very first ranks. Cormack et al.'s 60 made a
/// passage both rankings list at middling ranks beat the one a strong ranking puts first and
/// the other misses (with all-mpnet-base-v2 on the man-page set, recall@5 0.642 at 60 and
/// 0.717 at 20, cited 0.575 and 0.600); 20 left every other set and model as it was
/// (BENCHMARKS.md "A second embedding model, and the RRF constant").
pub(crate) const K: f32 = 20.0;
/// A document in the top this-many of both rankings is a clear match: two rankers that share
/// nothing (word counts, a neural embedding) both put it among the passages a request gets by
/// default. Three kept the grader dropping passages both had found on real READMEs (python set,
/// hybrid: 2 of 60 expected sources dropped at 3, 1 at 5).
pub(crate) const CLEAR_TOP: usize = 5;
/// The first BM25 hit is a clear match when it scores this many times the second.
pub(crate) const BM25_LEAD: f32 = 1.2;

/// The BM25 hit whose score [`bm25_weight`] compares with the first's.
pub(crate) const BM25_DEPTH: usize = 10;

/// The BM25 ranking's weight in the fusion, from 0 to 2: `2 × (1 − s10 / s1)`, where `s1` is the
/// first hit's score and `s10` the [`BM25_DEPTH`]th's (0 when there are fewer hits). Equal to
/// the vectors' (1) when the tenth hit scores half the first; near 0 when ten passages score
/// alike (no word of the question singles any out); 2 when a few passages alone hold its words.
/// Measured on three corpora and two embedding models (BENCHMARKS.md "BM25 weighted by its own
/// lead").
pub(crate) fn bm25_weight(scores: impl IntoIterator<Item = f32>) -> f32 {
    let mut scores = scores.into_iter();
    let Some(first) = scores.next().filter(|s| *s > 0.0) else {
        return 1.0;
    };
    let tenth = scores.nth(BM25_DEPTH - 2).unwrap_or(0.0);
    2.0 * (1.0 - (tenth / first).clamp(0.0, 1.0))
}

/// The share of BM25's first [`BM25_DEPTH`] hits whose source document (`source`) has a
/// passage among the `vector` hits: 1 when either list is empty. It scales BM25's weight in
/// the fusion: measured on three corpora and two embedding models, it raised the expected page
/// into the five on the man-page set (e5-small) and never lowered a set (BENCHMARKS.md "BM25
/// weighed by its agreement with the vectors").
pub(crate) fn agreement<K: Copy>(
    bm25: &[(K, f32)],
    vector: &[(K, f32)],
    source: impl Fn(K) -> u64,
) -> f32 {
    let first = &bm25[..bm25.len().min(BM25_DEPTH)];
    if first.is_empty() || vector.is_empty() {
        return 1.0;
    }
    let found: HashSet<u64> = vector.iter().map(|h| source(h.0)).collect();
    let shared = first
        .iter()
        .filter(|h| found.contains(&source(h.0)))
        .count();
    shared as f32 / first.len() as f32
}

/// The first BM25 hit when it leads clearly over the best hit of any
/// other source document (alone, or scoring [`BM25_LEAD`] times it): a second passage of the same document (or of a copy of it) does not
/// make the first one less of a match.
pub(crate) fn clear_lead<K: Copy>(hits: &[(K, f32)], source: impl Fn(K) -> u64) -> Option<K> {
    let first = hits.first()?;
    let own = source(first.0);
    let other = hits.iter().find(|h| source(h.0) != own);
    let lead = match other {
        None => true,
        Some(other) => first.1 >= BM25_LEAD * other.1,
    };
    lead.then_some(first.0)
}

/// The weight of one ranking's term for a candidate: `weight`, but for the clear BM25 lead's own
/// term (`clear_lead`), which weighs `bm25_lead` undiscounted by the agreement. The agreement
/// discounts BM25 hits on pages the vectors never reach as the question's common words matching
/// by chance; a passage that leads every other document's by 1.2 times is no chance, and weak
/// vectors, which know none of its rare words, agree with none of BM25's pages, which drove its
/// weight to 0 (a README naming an invented protocol, 51st of the fused candidates:
/// `tests/kb_clear_match_corpus.rs`). Measured: BENCHMARKS.md "A clear match kept".
fn lead_weight(is_lead: bool, weight: f32, weights: &Weights) -> f32 {
    if is_lead {
        weights.bm25_lead
    } else {
        weight
    }
}

/// A fused candidate: the store's key for it, its source document, its fused score, its rank
/// and score in each ranking that holds it (ranks from 1), and whether it is a clear match.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Candidate<K> {
    pub key: K,
    pub source: u64,
    pub score: f32,
    pub bm25: Option<(u32, f32)>,
    pub vector: Option<(u32, f32)>,
    pub clear: bool,
}

/// Every candidate of both rankings, best first, with the two leads the keep rules hold
/// ([`super::leads`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fusion<K> {
    pub candidates: Vec<Candidate<K>>,
    pub weights: Weights,
    /// The clear BM25 lead ([`clear_lead`]), if BM25 has one.
    pub bm25_lead: Option<K>,
    /// The vector ranking's first.
    pub vector_lead: Option<K>,
}

/// Fuses the two rankings (each best first, as `(key, score)`; a key at most once in each):
/// every candidate, ranked by fused score, ties in the order first seen (BM25's, then the
/// vectors'). `source` names a candidate's source document.
pub(crate) fn fuse<K: Copy + Eq + Hash>(
    bm25: &[(K, f32)],
    vector: &[(K, f32)],
    source: impl Fn(K) -> u64,
) -> Fusion<K> {
    let (lead, agreement) = (
        bm25_weight(bm25.iter().map(|h| h.1)),
        agreement(bm25, vector, &source),
    );
    let weights = Weights {
        bm25: lead * agreement,
        bm25_lead: lead,
        agreement,
        vector: 1.0,
    };
    let bm25_lead = clear_lead(bm25, &source);
    let mut at: HashMap<K, usize> = HashMap::new();
    let mut candidates: Vec<Candidate<K>> = Vec::new();
    for (is_bm25, weight, list) in [(true, weights.bm25, bm25), (false, weights.vector, vector)] {
        for (rank, (key, score)) in list.iter().enumerate() {
            let i = *at.entry(*key).or_insert_with(|| {
                candidates.push(Candidate {
                    key: *key,
                    source: source(*key),
                    score: 0.0,
                    bm25: None,
                    vector: None,
                    clear: false,
                });
                candidates.len() - 1
            });
            let c = &mut candidates[i];
            let rank = rank as u32 + 1;
            let slot = if is_bm25 { &mut c.bm25 } else { &mut c.vector };
            if slot.is_none() {
                *slot = Some((rank, *score));
                c.score += lead_weight(is_bm25 && bm25_lead == Some(*key), weight, &weights)
                    / (K + rank as f32);
            }
        }
    }
    let top = |r: Option<(u32, f32)>| r.is_some_and(|(rank, _)| rank as usize <= CLEAR_TOP);
    for c in &mut candidates {
        c.clear = bm25_lead == Some(c.key) || (top(c.bm25) && top(c.vector));
    }
    // A stable sort: ties keep the order first seen.
    candidates.sort_by(|a, b| b.score.total_cmp(&a.score));
    Fusion {
        candidates,
        weights,
        bm25_lead,
        vector_lead: vector.first().map(|h| h.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::bm25::Hit;
    use crate::search::ranking::KeptBy;

    /// Every passage its own source document.
    fn own(id: u32) -> u64 {
        u64::from(id)
    }

    /// Every passage of one source document: BM25 and the vectors always agree.
    fn one_document(_: u32) -> u64 {
        0
    }

    fn ids(fusion: &Fusion<u32>) -> Vec<u32> {
        fusion.candidates.iter().map(|c| c.key).collect()
    }

    #[test]
    fn bm25_weighs_by_its_agreement_with_the_vectors() {
        let hits = |ids: std::ops::Range<u32>| ids.map(|id| (id, 10.0 - id as f32)).collect();
        let bm25: Vec<Hit> = hits(0..12);
        assert_eq!(agreement(&bm25, &[], own), 1.0, "no vectors: BM25 as it is");
        assert_eq!(agreement(&[], &[(3, 0.9)], own), 1.0);
        // Passages 0 to 9 count; 3 and 7 are among the vectors' (11 is past the tenth).
        let vector = [(3, 0.9), (7, 0.8), (11, 0.7), (40, 0.6)];
        assert!((agreement(&bm25, &vector, own) - 0.2).abs() < 1e-6);
        // By document: even passages are one document's, odd ones another's; the vectors
        // found passage 40 only, and with it the even passages' document.
        let doc = |id: u32| u64::from(id % 2);
        assert!((agreement(&bm25, &[(40, 0.9)], doc) - 0.5).abs() < 1e-6);

        // A peaked BM25 ranking on pages the vectors never reach: the vectors' first leads;
        // the same ranking on pages they do reach: BM25's first.
        let vector = [(20, 0.9), (21, 0.8), (22, 0.7)];
        let peaked: Vec<Hit> = (0..10).map(|id| (id, 10.0 - id as f32)).collect();
        assert_eq!(ids(&fuse(&peaked, &vector, own))[0], 20);
        assert_eq!(ids(&fuse(&peaked, &vector, one_document))[0], 0);
    }

    #[test]
    fn documents_in_both_rankings_rise_to_the_top() {
        // BM25: 1, 2, 3 (three hits: the few that hold the words, weight 2); vectors: 4, 3, 5.
        // Document 3 is in both.
        let bm25 = [(1, 9.0), (2, 8.5), (3, 8.0)];
        let vector = [(4, 0.9), (3, 0.8), (5, 0.7)];
        let fused = fuse(&bm25, &vector, one_document);
        assert_eq!(ids(&fused), [3, 1, 2, 4, 5], "every candidate, none cut");
        let first = fused.candidates[0];
        assert!((first.score - (2.0 / (K + 3.0) + 1.0 / (K + 2.0))).abs() < 1e-6);
        assert_eq!((first.bm25, first.vector), (Some((3, 8.0)), Some((2, 0.8))));
        assert!(first.clear, "top five of both");
        // BM25's first leads clearly: no other document's hit is near it (all are one's).
        assert!(fused.candidates[1].clear);
        assert_eq!((fused.bm25_lead, fused.vector_lead), (Some(1), Some(4)));
        let own = fuse(&bm25, &vector, own);
        assert_eq!(
            own.bm25_lead, None,
            "9.0 over another document's 8.5 is not clear"
        );
        assert_eq!(fused.weights.bm25, 2.0);
    }

    #[test]
    fn bm25_weighs_by_how_far_its_first_hit_stands_out() {
        assert_eq!(bm25_weight([]), 1.0);
        assert_eq!(bm25_weight([0.0, 0.0]), 1.0);
        assert_eq!(bm25_weight([3.0]), 2.0, "a lone hit");
        let scores = |tenth: f32| (0..10).map(move |i| 10.0 - i as f32 * (10.0 - tenth) / 9.0);
        assert!(
            (bm25_weight(scores(5.0)) - 1.0).abs() < 1e-5,
            "half: the vectors' weight"
        );
        assert!((bm25_weight(scores(9.0)) - 0.2).abs() < 1e-5, "flat");
        assert!((bm25_weight(scores(1.0)) - 1.8).abs() < 1e-5, "peaked");
        // Hits past the tenth do not count.
        assert_eq!(
            bm25_weight(scores(9.0).chain([0.1])),
            bm25_weight(scores(9.0))
        );

        // Ten passages scoring alike by BM25: the vectors' first (20) ranks first, ahead of
        // BM25's first; with a peaked BM25 ranking, BM25's first does.
        let vector = [(20, 0.9), (21, 0.8), (22, 0.7)];
        let ranked = |bm25: Vec<Hit>| ids(&fuse(&bm25, &vector, one_document))[0];
        let hits = |tenth: f32| scores(tenth).zip(0..).map(|(s, id)| (id, s)).collect();
        assert_eq!(ranked(hits(9.0)), 20);
        assert_eq!(ranked(hits(1.0)), 0);
    }

    #[test]
    fn a_clear_bm25_lead_is_a_clear_match() {
        assert_eq!(clear_lead(&[(7, 3.0)], own), Some(7));
        assert_eq!(clear_lead(&[(7, 3.0), (8, 2.0)], own), Some(7));
        assert_eq!(clear_lead(&[(7, 3.0), (8, 2.9)], own), None);
        assert_eq!(clear_lead::<u32>(&[], own), None);
        // A second passage of the same document does not count against it.
        let pairs = |id: u32| u64::from(id / 2);
        assert_eq!(clear_lead(&[(6, 3.0), (7, 2.9), (8, 2.0)], pairs), Some(6));
        let fused = fuse(&[(7, 3.0), (8, 1.0)], &[], own);
        assert!(fused.candidates[0].clear && !fused.candidates[1].clear);
        assert_eq!(fused.bm25_lead, Some(7));
    }

    #[test]
    fn a_clear_lead_ranked_out_by_fusion_is_kept_in_the_last_place() {
        // BM25 leads clearly with 9 (a rare word only it contains); the vectors know nothing of
        // it and agree with BM25's middling ranks on 2, 3 and 4.
        let bm25 = [(9, 12.0), (2, 5.0), (3, 4.9), (4, 4.8)];
        let vector = [(2, 0.9), (3, 0.8), (4, 0.7), (5, 0.6), (6, 0.5)];
        let fused = fuse(&bm25, &vector, own);
        let at = ids(&fused).iter().position(|id| *id == 9).unwrap();
        assert!(at >= 3, "fusion ranks it out of three: {:?}", ids(&fused));
        let kept = fused.select(3, 0);
        let kept_ids: Vec<u32> = kept.iter().map(|s| s.candidate.key).collect();
        assert_eq!(kept_ids, [ids(&fused)[0], ids(&fused)[1], 9]);
        assert_eq!(kept[2].kept_by, KeptBy::Bm25Lead);
        assert_eq!(kept[2].fused_rank as usize, at + 1);
        assert!(kept[2].candidate.clear);
        assert_eq!(kept[0].kept_by, KeptBy::Rank);
    }

    #[test]
    fn a_clear_lead_is_not_discounted_by_the_agreement() {
        // The vectors share no document with BM25: its weight is 0, which once scored its clear
        // lead 0, below fifty vector hits.
        let bm25 = [(1000, 25.9), (1001, 14.1)];
        let vector: Vec<Hit> = (0..50).map(|id| (id, 0.9 - id as f32 / 100.0)).collect();
        let fused = fuse(&bm25, &vector, own);
        assert_eq!(fused.weights.bm25, 0.0);
        assert_eq!(fused.candidates.len(), 52);
        // Its own term weighs BM25's lead weight (2, a lone pair), undiscounted: 2 / 21 over
        // the vectors' first 1 / 21. BM25's second scores 0.
        assert_eq!(fused.weights.bm25_lead, 2.0);
        assert_eq!(fused.candidates[0].key, 1000);
        assert_eq!(fused.candidates[51].key, 1001);
        let kept: Vec<u32> = fused.select(3, 2).iter().map(|s| s.candidate.key).collect();
        assert_eq!(kept, [1000, 0, 1]);
    }
}
