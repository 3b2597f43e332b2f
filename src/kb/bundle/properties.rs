//! The keep rules' promises on a real bundle: generated passages (a few documents of a few
//! passages, each a handful of words from a small vocabulary, so BM25 scores tie and lead by
//! chance), generated vectors and query vectors, any limit and per-document cap. The rankings
//! the bundle fused are read from its own index and vectors, and what it returned is checked
//! against them (`search::hybrid::properties::check`).
use super::KnowledgeBase;
use crate::knowledge::KbStats;
use crate::knowledge::{DocKind, Document};
use crate::search::hybrid::properties::{check, Case};
use crate::search::RetrievalOptions;
use crate::search::Vectors;
use proptest::prelude::*;

const WORDS: &[&str] = &[
    "durian", "orchard", "zorblat", "quench", "canker", "mulch", "pruning", "harvest",
];
const DIMS: usize = 4;

/// Passages: (document, word indices, vector).
type Corpus = Vec<(u32, Vec<usize>, Vec<f32>)>;

fn corpus() -> impl Strategy<Value = Corpus> {
    let passage = (
        0u32..6,
        proptest::collection::vec(0..WORDS.len(), 1..8),
        proptest::collection::vec(-1.0f32..1.0, DIMS),
    );
    proptest::collection::vec(passage, 2..30)
}

fn bundle(corpus: &Corpus) -> KnowledgeBase {
    let docs: Vec<Document> = corpus
        .iter()
        .enumerate()
        .map(|(i, (doc, words, _))| Document {
            id: format!("doc{doc}#{i}"),
            title: format!("Document {doc}"),
            url: format!("kb://doc{doc}.md#{i}"),
            content: words
                .iter()
                .map(|w| WORDS[*w])
                .collect::<Vec<_>>()
                .join(" "),
            score: 0.0,
            kind: DocKind::Episode,
            clear_match: false,
            from_graph: false,
            vector_rank: None,
        })
        .collect();
    let mut kb = KnowledgeBase::from_documents(&docs).unwrap();
    let vectors: Vec<Vec<f32>> = corpus.iter().map(|p| p.2.clone()).collect();
    let bytes = tantivy::directory::OwnedBytes::new(Vectors::encode(&vectors, DIMS));
    kb.vectors = Some(Vectors::decode(bytes, DIMS, vectors.len()).unwrap());
    kb.stats = KbStats {
        passages: docs.len(),
        ..KbStats::default()
    };
    kb
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn a_bundle_keeps_both_leads_and_as_many_passages_as_offered(
        corpus in corpus(),
        query in proptest::collection::vec(0..WORDS.len(), 1..4),
        vector in proptest::collection::vec(-1.0f32..1.0, DIMS),
        limit in 1usize..10,
        cap in 0usize..4,
    ) {
        let kb = bundle(&corpus).with_max_passages_per_document(cap);
        let query: Vec<&str> = query.iter().map(|w| WORDS[*w]).collect();
        let query = query.join(" ");
        let options = RetrievalOptions {
            limit,
            nodes: false,
            edges: false,
            ..RetrievalOptions::default()
        };
        let found = kb.search_explained(&query, Some(&vector), &options).unwrap();
        // The rankings it fused, from its own index and vectors.
        let bm25 = kb.index.hits(&query, &options, 50, None).unwrap();
        let nearest = kb.vectors.as_ref().unwrap().top(&vector, 50, None);
        let case = Case {
            bm25,
            vector: nearest,
            sources: (0..corpus.len() as u32).map(|id| kb.index.source(id)).collect(),
            limit,
            cap,
        };
        let position = |d: &Document| d.url.rsplit('#').next().unwrap().parse::<u32>().unwrap();
        let kept: Vec<u32> = found.iter().map(|e| position(&e.document)).collect();
        if let Err(broken) = check(&case, &kept) {
            return Err(TestCaseError::fail(broken));
        }
        for e in &found {
            let ranking = e.ranking.as_ref().unwrap();
            prop_assert!((ranking.score - e.document.score).abs() < 1e-6);
        }
    }
}
