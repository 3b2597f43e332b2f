//! What fusion promises (`leads`' module docs), as properties over generated rankings: any
//! BM25 and vector rankings over a few documents of a few passages each, any scores (ties
//! included), any limit and per-document cap. The stores' own adapters are checked the same
//! way: the bundle's in `kb::bundle::properties`, PostgreSQL's rows in `kb::postgres::properties`.
use super::fusion::{fuse, Fusion};
use proptest::prelude::*;
use std::collections::HashSet;

/// A generated search: two rankings (each best first, a key at most once), each key's source
/// document, a limit and a per-document cap.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub bm25: Vec<(u32, f32)>,
    pub vector: Vec<(u32, f32)>,
    /// Each key's source document, by key.
    pub sources: Vec<u64>,
    pub limit: usize,
    pub cap: usize,
}

impl Case {
    /// Passage `key`'s document.
    pub(crate) fn source(&self, key: u32) -> u64 {
        self.sources[key as usize]
    }

    pub(crate) fn fusion(&self) -> Fusion<u32> {
        fuse(&self.bm25, &self.vector, |k| self.source(k))
    }
}

/// A ranking of distinct keys below `pool`, in any order, scores falling (with ties) from
/// `top`.
fn ranking(pool: u32, top: f32) -> impl Strategy<Value = Vec<(u32, f32)>> {
    let keys = proptest::sample::subsequence((0..pool).collect::<Vec<_>>(), 0..=pool as usize)
        .prop_shuffle();
    (keys, proptest::collection::vec(0u8..4, pool as usize)).prop_map(move |(keys, drops)| {
        let mut score = top;
        keys.into_iter()
            .zip(drops)
            .map(|(key, drop)| {
                score -= f32::from(drop) * top / 16.0;
                (key, score.max(0.01))
            })
            .collect()
    })
}

/// Any search (see [`Case`]).
pub(crate) fn case() -> impl Strategy<Value = Case> {
    (4u32..40, 1u32..8, 1usize..12, 0usize..4).prop_flat_map(|(pool, documents, limit, cap)| {
        // Passages are dealt to documents in turn.
        let sources = (0..pool)
            .map(|k| u64::from(k % documents))
            .collect::<Vec<_>>();
        (ranking(pool, 25.0), ranking(pool, 0.9)).prop_map(move |(bm25, vector)| Case {
            bm25,
            vector,
            sources: sources.clone(),
            limit,
            cap,
        })
    })
}

/// Checks the promises on `kept` (keys in order) for `case`'s rankings; `Err` names the one
/// broken.
pub(crate) fn check(case: &Case, kept: &[u32]) -> Result<(), String> {
    let fusion = case.fusion();
    let candidates: Vec<u32> = fusion.candidates.iter().map(|c| c.key).collect();
    let distinct: HashSet<u32> = kept.iter().copied().collect();
    if distinct.len() != kept.len() {
        return Err(format!("a passage twice: {kept:?}"));
    }
    if let Some(k) = kept.iter().find(|k| !candidates.contains(k)) {
        return Err(format!("{k} is no ranking's candidate"));
    }
    if case.cap > 0 {
        for k in kept {
            let own = kept
                .iter()
                .filter(|o| case.source(**o) == case.source(*k))
                .count();
            if own > case.cap {
                return Err(format!("{own} passages of one document over the cap"));
            }
        }
    }
    let capped = crate::search::cap::per_source(
        candidates.iter().copied(),
        |k| case.source(*k),
        case.cap,
        case.limit,
    );
    if kept.len() != capped.len() {
        return Err(format!(
            "{} passages where the rankings offer {}",
            kept.len(),
            capped.len()
        ));
    }
    let has = |lead: Option<u32>| lead.is_none_or(|l| kept.contains(&l));
    let (bm25_lead, vector_lead) = (fusion.bm25_lead, fusion.vector_lead);
    if case.limit == 1 {
        let one = bm25_lead.or(vector_lead);
        if one.is_some() && kept.first().copied() != one {
            return Err(format!("k = 1 returned {kept:?}, not the lead {one:?}"));
        }
        return Ok(());
    }
    if !has(bm25_lead) {
        return Err(format!("the clear BM25 lead {bm25_lead:?} lost: {kept:?}"));
    }
    let one_place = case.cap == 1
        && matches!((bm25_lead, vector_lead), (Some(b), Some(v)) if case.source(b) == case.source(v));
    if !one_place && !has(vector_lead) {
        return Err(format!("the vectors' first {vector_lead:?} lost: {kept:?}"));
    }
    // A lead of a document already kept takes that document's place: no document loses its
    // place but to a lead of a document the fused ranking did not keep.
    let sources = |keys: &[u32]| -> HashSet<u64> { keys.iter().map(|k| case.source(*k)).collect() };
    let (before, after) = (sources(&capped), sources(kept));
    let leads: Vec<u32> = [bm25_lead, vector_lead].into_iter().flatten().collect();
    // A lead takes another document's place only when its own has no kept passage left that
    // is not a lead: per document, the leads to place beyond those passages.
    let newcomers: usize = leads
        .iter()
        .map(|l| case.source(*l))
        .collect::<HashSet<_>>()
        .into_iter()
        .map(|doc| {
            let of = |k: &&u32| case.source(**k) == doc;
            let need = leads
                .iter()
                .filter(of)
                .filter(|l| !capped.contains(l))
                .count();
            let spare = capped
                .iter()
                .filter(of)
                .filter(|c| !leads.contains(c))
                .count();
            need.saturating_sub(spare)
        })
        .sum();
    let lost = before.difference(&after).count();
    if lost > newcomers {
        return Err(format!(
            "{lost} documents lost their place to {newcomers} leads: {capped:?} → {kept:?}"
        ));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn fusion_keeps_both_leads_and_as_many_passages_as_offered(case in case()) {
        let kept: Vec<u32> = case
            .fusion()
            .select(case.limit, case.cap)
            .iter()
            .map(|s| s.candidate.key)
            .collect();
        if let Err(broken) = check(&case, &kept) {
            return Err(TestCaseError::fail(broken));
        }
    }

    #[test]
    fn fusion_is_deterministic(case in case()) {
        prop_assert_eq!(case.fusion(), case.fusion());
        prop_assert_eq!(
            case.fusion().select(case.limit, case.cap),
            case.fusion().select(case.limit, case.cap)
        );
    }

    #[test]
    fn every_candidate_is_fused_and_scored_by_its_ranks(case in case()) {
        let fusion = case.fusion();
        let offered: HashSet<u32> =
            case.bm25.iter().chain(&case.vector).map(|h| h.0).collect();
        prop_assert_eq!(fusion.candidates.len(), offered.len());
        for c in &fusion.candidates {
            let part = |p: Option<(u32, f32)>, w: f32| {
                p.map_or(0.0, |(r, _)| w / (super::fusion::K + r as f32))
            };
            // The clear lead's own BM25 term is not discounted by the agreement.
            let bm25_weight = match fusion.bm25_lead == Some(c.key) {
                true => fusion.weights.bm25_lead,
                false => fusion.weights.bm25,
            };
            let expected = part(c.bm25, bm25_weight) + part(c.vector, 1.0);
            prop_assert!((c.score - expected).abs() < 1e-6);
        }
        prop_assert!(fusion.candidates.windows(2).all(|w| w[0].score >= w[1].score));
    }
}
