//! The keep rules: which of the fused candidates a request gets ([`Fusion::select`]).
//!
//! The fused ranking, capped per source document ([`cap::per_source`]) and cut to the limit,
//! with two passages kept whatever their fused rank: the clear BM25 lead (a rare word, a part
//! number, an error code that only it contains, which weak vectors rank anywhere) and the
//! vector ranking's first (the nearest by meaning, found in other words). What they promise,
//! for any two rankings, any scores and any limit `k` (tested as properties in
//! `hybrid::properties` and on every store):
//!
//! 1. For `k ≥ 2`, both leads are among the `k` passages returned (each passage itself, not
//!    only a passage of its document), except when both are of one document and the
//!    per-document cap is 1: then that document's one place is the BM25 lead's.
//! 2. For `k = 1`, the one passage is the clear BM25 lead when BM25 has one, else the vector
//!    ranking's first.
//! 3. No other document loses its place to a lead of a document already kept: the lead takes
//!    the place of that document's lowest kept passage that is not the other lead. A lead of a
//!    document not yet kept (or kept only as the other lead) takes the last place no earlier
//!    lead holds.
//! 4. The result is as long as the rankings allow: `min(k, candidates)` without a cap, and never
//!    shorter than the capped fused ranking; no passage twice; at most the cap per document.
//! 5. The same rankings give the same passages in the same order (ties keep BM25's order).
use super::fusion::{Candidate, Fusion};
use crate::search::cap;
use crate::search::ranking::{KeptBy, Place, Ranking};

/// A selected candidate: its fused rank (from 1, before the keep rules) and the rule that kept
/// it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Selected<K> {
    pub candidate: Candidate<K>,
    pub fused_rank: u32,
    pub kept_by: KeptBy,
}

impl<K> Selected<K> {
    /// How it ranked in `fusion` (the fusion it was selected from).
    pub(crate) fn ranking(&self, fusion: &Fusion<K>) -> Ranking {
        let place = |p: Option<(u32, f32)>| p.map(|(rank, score)| Place { rank, score });
        Ranking {
            bm25: place(self.candidate.bm25),
            vector: place(self.candidate.vector),
            weights: Some(fusion.weights),
            score: self.candidate.score,
            rank: Some(self.fused_rank),
            kept_by: self.kept_by,
        }
    }
}

impl<K: Copy + Eq> Fusion<K> {
    /// The passages a request gets: at most `limit`, at most `max_per_document` of one source
    /// (0: no cap), the leads kept (see the module docs).
    pub(crate) fn select(&self, limit: usize, max_per_document: usize) -> Vec<Selected<K>> {
        let ranked = self.candidates.iter().enumerate().map(|(i, c)| Selected {
            candidate: *c,
            fused_rank: i as u32 + 1,
            kept_by: KeptBy::Rank,
        });
        let kept = cap::per_source(ranked, |s| s.candidate.source, max_per_document, limit);
        let lead = |key: Option<K>, kept_by| {
            let key = key?;
            let i = self.candidates.iter().position(|c| c.key == key)?;
            Some(Selected {
                candidate: self.candidates[i],
                fused_rank: i as u32 + 1,
                kept_by,
            })
        };
        let leads = [
            lead(self.bm25_lead, KeptBy::Bm25Lead),
            lead(self.vector_lead, KeptBy::VectorLead),
        ];
        keep_leads(
            kept,
            leads.into_iter().flatten(),
            |s| s.candidate.key,
            |s| s.candidate.source,
            limit,
            max_per_document,
        )
    }
}

/// `kept` (the capped ranking, at most `limit`) with each of `leads` placed in it, in order, by
/// the rules of the module docs; `key` names an item, `source` its document.
pub(crate) fn keep_leads<T, K: PartialEq>(
    mut kept: Vec<T>,
    leads: impl IntoIterator<Item = T>,
    key: impl Fn(&T) -> K,
    source: impl Fn(&T) -> u64,
    limit: usize,
    max_per_document: usize,
) -> Vec<T> {
    // The keys of the leads already placed: a later lead never takes their place.
    let mut placed: Vec<K> = Vec::new();
    for lead in leads {
        let lead_key = key(&lead);
        if kept.iter().any(|k| key(k) == lead_key) {
            placed.push(lead_key);
            continue;
        }
        let lead_source = source(&lead);
        let same = |k: &T| source(k) == lead_source;
        let own = kept.iter().filter(|k| same(k)).count();
        let slot = if let Some(slot) = kept
            .iter()
            .rposition(|k| same(k) && !placed.contains(&key(k)))
        {
            Some(slot)
        } else if max_per_document != 0 && own >= max_per_document {
            None
        } else if kept.len() < limit {
            kept.push(lead);
            placed.push(lead_key);
            continue;
        } else {
            kept.iter().rposition(|k| !placed.contains(&key(k)))
        };
        if let Some(slot) = slot {
            kept[slot] = lead;
            placed.push(lead_key);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `keep_leads` over plain ids, `source` naming each id's document; no cap.
    fn place(kept: Vec<u32>, leads: &[u32], source: fn(u32) -> u64, limit: usize) -> Vec<u32> {
        keep_leads(
            kept,
            leads.iter().copied(),
            |id| *id,
            |id| source(*id),
            limit,
            0,
        )
    }

    fn own(id: u32) -> u64 {
        u64::from(id)
    }

    #[test]
    fn the_vector_lead_takes_the_last_place_the_bm25_lead_left() {
        // Kept 1, 2, 3; the BM25 lead 9 and the vectors' first 8 both ranked out: 9 takes the
        // last place, 8 the one before it (never 9's).
        assert_eq!(place(vec![1, 2, 3], &[9, 8], own, 3), [1, 8, 9]);
        // No BM25 lead: the vectors' first takes the last place.
        assert_eq!(place(vec![1, 2, 3], &[8], own, 3), [1, 2, 8]);
        // The BM25 lead is kept already (last): the vectors' first takes the place before it.
        assert_eq!(place(vec![1, 2, 9], &[9, 8], own, 3), [1, 8, 9]);
        // One place: the BM25 lead holds it.
        assert_eq!(place(vec![1], &[9, 8], own, 1), [9]);
        // Fewer than the limit: added.
        assert_eq!(place(vec![1], &[9], own, 3), [1, 9]);
    }

    #[test]
    fn a_lead_of_a_document_kept_takes_that_documents_place() {
        // 1 and 0 are one document, 3 and 2 another: lead 0 takes 1's place, lead 2 takes 3's;
        // no other document loses its place.
        let pairs = |id: u32| u64::from(id / 2);
        assert_eq!(place(vec![1, 4, 3], &[0, 2], pairs, 3), [0, 4, 2]);
        // Its document's lowest kept passage gives way, and never to a later lead.
        assert_eq!(place(vec![0, 1, 4], &[1, 0], pairs, 3), [0, 1, 4]);
        // Both leads of one document: the second takes the last place the first left.
        assert_eq!(place(vec![6, 7, 4], &[5, 4], pairs, 3), [6, 4, 5]);
    }

    #[test]
    fn the_cap_holds_and_the_bm25_lead_keeps_its_documents_one_place() {
        let pairs = |id: u32| u64::from(id / 2);
        let capped = |kept: Vec<u32>, leads: &[u32], cap| {
            keep_leads(
                kept,
                leads.iter().copied(),
                |id| *id,
                |id| pairs(*id),
                3,
                cap,
            )
        };
        // Cap 1, both leads of document 0 (passages 0 and 1): the BM25 lead holds its place.
        assert_eq!(capped(vec![2, 4, 6], &[0, 1], 1), [2, 4, 0]);
        // Cap 2: both.
        assert_eq!(capped(vec![2, 4, 6], &[0, 1], 2), [2, 1, 0]);
    }
}
