//! Graph neighbourhood on the embedded sample: a query naming an entity brings in its one-hop
//! relations (and, with community retrieval, its communities); the kind toggles and the limit
//! hold; a query matching no entity is plain BM25; an ingested bundle expands the same way.
use bounded_rag::ingest::ingest_dir;
use bounded_rag::knowledge::{DocKind, Document};
use bounded_rag::search::RetrievalOptions;
use std::collections::HashSet;
use std::path::Path;

const PALMIVORA: &str = "What does Phytophthora palmivora cause?";

/// The one-hop relations of `phytophthora_palmivora` in `kb/edges.jsonl` (lines 1-4).
const PALMIVORA_EDGES: [&str; 4] = [
    "kb://edges.jsonl#1",
    "kb://edges.jsonl#2",
    "kb://edges.jsonl#3",
    "kb://edges.jsonl#4",
];
const PALMIVORA_COMMUNITY: &str = "kb://communities.jsonl#phytophthora_complex";

fn options(limit: usize, communities: bool) -> RetrievalOptions {
    RetrievalOptions {
        limit,
        nodes: true,
        edges: true,
        episodes: true,
        communities,
        filter: None,
    }
}

fn urls(docs: &[Document]) -> Vec<&str> {
    docs.iter().map(|d| d.url.as_str()).collect()
}

fn assert_unique(docs: &[Document]) {
    let unique: HashSet<&str> = docs.iter().map(|d| d.url.as_str()).collect();
    assert_eq!(unique.len(), docs.len(), "{:?}", urls(docs));
}

#[test]
fn an_entity_brings_its_relations_and_with_communities_its_community() {
    let kb = bounded_rag::ingest::sample_kb().unwrap();
    let docs = kb.search(PALMIVORA, &options(10, true)).unwrap();
    let found = urls(&docs);
    assert!(found.contains(&"kb://nodes.jsonl#phytophthora_palmivora"));
    for edge in PALMIVORA_EDGES {
        assert!(found.contains(&edge), "{edge} missing from {found:?}");
    }
    let community = docs.iter().find(|d| d.url == PALMIVORA_COMMUNITY);
    let community = community.expect("the entity's community joins the candidates");
    assert_eq!(community.kind, DocKind::Community);
    assert!(community.from_graph, "added as a neighbour, not a hit");
    assert!(docs.len() <= 10);
    assert_unique(&docs);
    assert!(docs.windows(2).all(|w| w[0].score >= w[1].score));

    let without = kb.search(PALMIVORA, &options(10, false)).unwrap();
    for edge in PALMIVORA_EDGES {
        assert!(urls(&without).contains(&edge), "{edge}");
    }
    assert!(without.iter().all(|d| d.kind != DocKind::Community));
}

#[test]
fn the_first_direct_hit_leads_and_toggles_and_limit_hold() {
    let kb = bounded_rag::ingest::sample_kb().unwrap();
    let no_edges = RetrievalOptions {
        edges: false,
        ..options(10, true)
    };
    let docs = kb.search(PALMIVORA, &no_edges).unwrap();
    assert!(
        docs.iter().all(|d| d.kind != DocKind::Edge),
        "{:?}",
        urls(&docs)
    );
    assert!(urls(&docs).contains(&PALMIVORA_COMMUNITY));

    let no_nodes = RetrievalOptions {
        nodes: false,
        ..options(10, true)
    };
    let docs = kb.search(PALMIVORA, &no_nodes).unwrap();
    assert!(
        docs.iter().all(|d| !d.from_graph),
        "no entity, no expansion"
    );

    for limit in 1..=10 {
        for communities in [false, true] {
            let opts = options(limit, communities);
            let docs = kb.search(PALMIVORA, &opts).unwrap();
            assert!(docs.len() <= limit, "{limit}: {:?}", urls(&docs));
            assert_unique(&docs);
            assert!(!docs[0].from_graph, "a direct hit leads");
            let first = kb.search(PALMIVORA, &options(1, communities)).unwrap();
            assert_eq!(docs[0], first[0]);
        }
    }
}

#[test]
fn a_query_matching_no_entity_is_plain_bm25() {
    let kb = bounded_rag::ingest::sample_kb().unwrap();
    let query = "Which traps and tools help with mulch and wind?";
    let docs = kb.search(query, &options(10, true)).unwrap();
    assert!(!docs.is_empty());
    assert!(docs
        .iter()
        .all(|d| d.kind != DocKind::Node && !d.from_graph));
    // Nodes off: no entity can match, so these are the BM25 hits alone.
    let bm25 = RetrievalOptions {
        nodes: false,
        ..options(10, true)
    };
    assert_eq!(docs, kb.search(query, &bm25).unwrap());
}

#[test]
fn an_ingested_bundle_expands_like_the_in_memory_build() {
    let kb_dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/kb"));
    let out = tempfile::tempdir().unwrap();
    let bundle = out.path().join("bundle");
    ingest_dir(kb_dir, &bundle).unwrap();
    let opened = bounded_rag::ingest::load_kb(&bundle).unwrap();
    let embedded = bounded_rag::ingest::sample_kb().unwrap();
    for communities in [false, true] {
        for limit in [3, 5, 10] {
            let opts = options(limit, communities);
            let a = embedded.search(PALMIVORA, &opts).unwrap();
            let b = opened.search(PALMIVORA, &opts).unwrap();
            assert_eq!(urls(&a), urls(&b), "limit {limit}");
            let from_graph = |d: &[Document]| d.iter().filter(|d| d.from_graph).count();
            assert_eq!(from_graph(&a), from_graph(&b));
        }
    }
    let docs = opened.search(PALMIVORA, &options(10, true)).unwrap();
    assert!(docs
        .iter()
        .any(|d| d.url == PALMIVORA_COMMUNITY && d.from_graph));
}
