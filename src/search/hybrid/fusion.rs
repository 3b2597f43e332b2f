//! Reciprocal rank fusion: each document scores `w / (K + rank)` in every ranking it appears
//! in (rank from 1), summed; ties keep the BM25 order. It needs no score calibration between
//! BM25 and cosine similarity, which live on unrelated scales. The vector ranking's weight `w`
//! is 1; the BM25 ranking's is how far its first hit stands out ([`bm25_weight`]): a question
//! whose words single out a few passages is BM25's to rank, one whose words are spread evenly
//! over many (the user's words are not the document's) is the vectors'; times how far its first
//! hits come from documents the vectors found too ([`agreement`]): BM25 hits on pages the
//! vectors never reach are the question's common words matching by chance.
//!
//! A fused document is a *clear match* when it is in the top [`CLEAR_TOP`] of both rankings,
//! or when it leads BM25 clearly ([`bm25_clear_lead`]); such a lead is never ranked out of the
//! passages a request gets, and neither is the vector ranking's first ([`keep_leads`]).
use crate::search::bm25::Hit;
use std::collections::{HashMap, HashSet};
use tantivy::DocId;

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
pub(crate) fn agreement(bm25: &[Hit], vector: &[Hit], source: impl Fn(DocId) -> u64) -> f32 {
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

/// A fused document: corpus position, fused score, clear match.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Fused {
    pub id: DocId,
    pub score: f32,
    pub clear: bool,
}

/// Whether the first BM25 hit leads clearly: alone, or scoring [`BM25_LEAD`] times the second.
pub(crate) fn bm25_clear_lead(hits: &[Hit]) -> bool {
    match hits {
        [] => false,
        [_] => true,
        [first, second, ..] => first.1 >= BM25_LEAD * second.1,
    }
}

/// The `limit` best documents of the fused rankings, best first; `source` names a passage's
/// source document (for [`agreement`]).
pub(crate) fn fuse(
    bm25: &[Hit],
    vector: &[Hit],
    limit: usize,
    source: impl Fn(DocId) -> u64,
) -> Vec<Fused> {
    let mut scores: HashMap<DocId, (f32, usize)> = HashMap::new();
    let mut order = 0;
    let bm25_w = bm25_weight(bm25.iter().map(|h| h.1)) * agreement(bm25, vector, source);
    for (weight, list) in [(bm25_w, bm25), (1.0, vector)] {
        for (rank, (id, _)) in list.iter().enumerate() {
            let entry = scores.entry(*id).or_insert_with(|| {
                order += 1;
                (0.0, order)
            });
            entry.0 += weight / (K + (rank + 1) as f32);
        }
    }
    let top = |list: &[Hit], id: DocId| list.iter().take(CLEAR_TOP).any(|h| h.0 == id);
    let lead = bm25_clear_lead(bm25).then(|| bm25[0].0);
    let mut fused: Vec<(DocId, f32, usize)> =
        scores.into_iter().map(|(id, (s, o))| (id, s, o)).collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    fused
        .into_iter()
        .take(limit)
        .map(|(id, score, _)| Fused {
            id,
            score,
            clear: lead == Some(id) || (top(bm25, id) && top(vector, id)),
        })
        .collect()
}

/// `kept`, the ranked passages a request gets (capped to `limit`), with each of the `leads`
/// among them, in order: the clear BM25 lead (a rare word, a part number, an error code that
/// only it contains) and the vector ranking's first passage (the nearest by meaning, found in
/// other words). Neither is ranked out by passages both rankers found at middling ranks. A lead
/// whose source (`source`) has no passage kept takes the last place no earlier lead holds (or is
/// added, when fewer than `limit` are kept); every other place stays. The bundle's fusion and
/// PostgreSQL's (in SQL) both end here.
pub(crate) fn keep_leads<T>(
    mut kept: Vec<T>,
    leads: impl IntoIterator<Item = T>,
    source: impl Fn(&T) -> u64,
    limit: usize,
) -> Vec<T> {
    // The sources of the leads already placed: a later lead never takes their place.
    let mut placed: Vec<u64> = Vec::new();
    for lead in leads {
        let lead_source = source(&lead);
        if kept.iter().any(|k| source(k) == lead_source) {
            placed.push(lead_source);
        } else if kept.len() < limit {
            kept.push(lead);
            placed.push(lead_source);
        } else if let Some(slot) = kept.iter().rposition(|k| !placed.contains(&source(k))) {
            kept[slot] = lead;
            placed.push(lead_source);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every passage its own source document.
    fn own(id: DocId) -> u64 {
        u64::from(id)
    }

    /// Every passage of one source document: BM25 and the vectors always agree.
    fn one_document(_: DocId) -> u64 {
        0
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
        let doc = |id: DocId| u64::from(id % 2);
        assert!((agreement(&bm25, &[(40, 0.9)], doc) - 0.5).abs() < 1e-6);

        // A peaked BM25 ranking on pages the vectors never reach: the vectors' first leads;
        // the same ranking on pages they do reach: BM25's first.
        let vector = [(20, 0.9), (21, 0.8), (22, 0.7)];
        let peaked: Vec<Hit> = (0..10).map(|id| (id, 10.0 - id as f32)).collect();
        assert_eq!(fuse(&peaked, &vector, 3, own)[0].id, 20);
        assert_eq!(fuse(&peaked, &vector, 3, one_document)[0].id, 0);
    }

    #[test]
    fn documents_in_both_rankings_rise_to_the_top() {
        // BM25: 1, 2, 3 (three hits: the few that hold the words, weight 2); vectors: 4, 3, 5.
        // Document 3 is in both.
        let bm25 = [(1, 9.0), (2, 8.5), (3, 8.0)];
        let vector = [(4, 0.9), (3, 0.8), (5, 0.7)];
        let fused = fuse(&bm25, &vector, 10, one_document);
        let ids: Vec<DocId> = fused.iter().map(|f| f.id).collect();
        assert_eq!(ids, [3, 1, 2, 4, 5]);
        assert!((fused[0].score - (2.0 / (K + 3.0) + 1.0 / (K + 2.0))).abs() < 1e-6);
        assert!(fused[0].clear, "top five of both");
        assert!(!fused[1].clear, "BM25 lead of 9.0 over 8.5 is not clear");
        assert_eq!(fuse(&bm25, &vector, 2, one_document).len(), 2);
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
        let ranked = |bm25: Vec<Hit>| fuse(&bm25, &vector, 3, one_document)[0].id;
        let hits = |tenth: f32| scores(tenth).zip(0..).map(|(s, id)| (id, s)).collect();
        assert_eq!(ranked(hits(9.0)), 20);
        assert_eq!(ranked(hits(1.0)), 0);
    }

    #[test]
    fn a_clear_bm25_lead_is_a_clear_match() {
        assert!(bm25_clear_lead(&[(7, 3.0)]));
        assert!(bm25_clear_lead(&[(7, 3.0), (8, 2.0)]));
        assert!(!bm25_clear_lead(&[(7, 3.0), (8, 2.9)]));
        assert!(!bm25_clear_lead(&[]));
        let fused = fuse(&[(7, 3.0), (8, 1.0)], &[], 5, own);
        assert!(fused[0].clear && !fused[1].clear);
    }

    #[test]
    fn a_clear_lead_ranked_out_by_fusion_takes_the_last_place() {
        // BM25 leads clearly with 9 (a rare word only it contains); the vectors know nothing of
        // it and agree with BM25's middling ranks on 2, 3 and 4.
        let bm25 = [(9, 12.0), (2, 5.0), (3, 4.9), (4, 4.8)];
        let vector = [(2, 0.9), (3, 0.8), (4, 0.7), (5, 0.6), (6, 0.5)];
        let all = fuse(&bm25, &vector, 50, own);
        let top3: Vec<Fused> = all.iter().copied().take(3).collect();
        assert!(
            top3.iter().all(|f| f.id != 9),
            "fusion ranked it out: {top3:?}"
        );
        let lead = all
            .iter()
            .find(|f| f.id == 9)
            .map(|f| Fused { clear: true, ..*f });
        let one_source_each = |f: &Fused| u64::from(f.id);
        let kept = keep_leads(top3.clone(), lead, one_source_each, 3);
        let ids: Vec<DocId> = kept.iter().map(|f| f.id).collect();
        assert_eq!(ids, [top3[0].id, top3[1].id, 9]);
        assert!(kept[2].clear);
        // Fewer than the limit: added. Its source already kept: nothing changes. No lead: none.
        let short = keep_leads(top3[..1].to_vec(), lead, one_source_each, 3);
        assert_eq!(
            short.iter().map(|f| f.id).collect::<Vec<_>>(),
            [top3[0].id, 9]
        );
        let same_source = |f: &Fused| u64::from(f.id == 9 || f.id == top3[0].id);
        assert_eq!(keep_leads(top3.clone(), lead, same_source, 3), top3);
        assert_eq!(keep_leads(top3.clone(), None, one_source_each, 3), top3);
    }

    #[test]
    fn the_vector_lead_takes_the_last_place_the_bm25_lead_left() {
        let own_source = |id: &u32| u64::from(*id);
        // Kept 1, 2, 3; the BM25 lead 9 and the vectors' first 8 both ranked out: 9 takes the
        // last place, 8 the one before it (never 9's).
        assert_eq!(keep_leads(vec![1, 2, 3], [9, 8], own_source, 3), [1, 8, 9]);
        // No BM25 lead: the vectors' first takes the last place.
        assert_eq!(keep_leads(vec![1, 2, 3], [8], own_source, 3), [1, 2, 8]);
        // The BM25 lead is kept already (last): the vectors' first takes the place before it.
        assert_eq!(keep_leads(vec![1, 2, 9], [9, 8], own_source, 3), [1, 8, 9]);
        // One place: the BM25 lead holds it.
        assert_eq!(keep_leads(vec![1], [9, 8], own_source, 1), [9]);
        // A passage of each lead's source is kept (1 of 0's, 2 and 3 of 2's): nothing moves.
        let pairs = |id: &u32| u64::from(*id / 2);
        assert_eq!(keep_leads(vec![1, 2, 3], [0, 2], pairs, 3), [1, 2, 3]);
    }
}
