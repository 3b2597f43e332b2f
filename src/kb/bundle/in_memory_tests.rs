//! Unit tests of a knowledge base indexed in memory: the per-document cap and its clear
//! lead, counts from documents.
use super::*;
use crate::search::RetrievalOptions;

fn passage(url: &str, title: &str, content: &str) -> Document {
    Document {
        score: 0.0,
        ..Document::passage(url, title, url, content)
    }
}

fn urls(docs: &[Document]) -> Vec<&str> {
    docs.iter().map(|d| d.url.as_str()).collect()
}

#[test]
fn one_document_fills_at_most_its_cap_and_its_lead_is_clear_over_other_documents() {
    let docs = [
        passage(
            "kb://phf/README.md#1",
            "phf",
            "perfect hash maps built at compile time",
        ),
        passage(
            "kb://phf/README.md#2",
            "phf — Usage",
            "perfect hash maps at compile time",
        ),
        passage(
            "kb://phf/README.md#3",
            "phf — More",
            "perfect hash maps, compile time",
        ),
        passage("kb://fnv/README.md#1", "fnv", "a hash for small maps"),
        passage("kb://other/a.md#1", "Other", "a clock shows the time"),
        passage("kb://other/b.md#1", "Bread", "flour, water and salt"),
        passage("kb://other/c.md#1", "Tea", "leaves steeped in hot water"),
        passage("kb://other/d.md#1", "Rain", "water falls from clouds"),
    ];
    let kb = KnowledgeBase::from_documents(&docs).unwrap();
    let options = RetrievalOptions {
        limit: 4,
        nodes: false,
        edges: false,
        episodes: true,
        communities: false,
        filter: None,
    };
    let query = "perfect hash maps at compile time";
    let hits = kb.search(query, &options).unwrap();
    let found = urls(&hits);
    assert_eq!(found.len(), 4);
    assert!(
        found[..2].iter().all(|u| u.starts_with("kb://phf/")),
        "{found:?}"
    );
    assert!(
        found[2..].iter().all(|u| !u.starts_with("kb://phf/")),
        "{found:?}"
    );
    // The second phf passage scores close to the first, but it is the same document: the
    // first leads every other document clearly, so the grader must keep it.
    let clear: Vec<&Document> = hits.iter().filter(|d| d.clear_match).collect();
    assert_eq!(clear.len(), 1);
    assert!(clear[0].url.starts_with("kb://phf/") && clear[0].score == hits[0].score);

    let one = kb.with_max_passages_per_document(1);
    let hits = one.search(query, &options).unwrap();
    assert_eq!(hits.len(), 3);
    assert_eq!(hits[0].url, found[0]);
    let uncapped = one.with_max_passages_per_document(0);
    let hits = uncapped.search(query, &options).unwrap();
    assert_eq!(
        hits.iter()
            .filter(|d| d.url.starts_with("kb://phf"))
            .count(),
        3
    );
}

#[test]
fn from_documents_counts_sources() {
    let doc = |url: &str, kind| Document {
        id: url.into(),
        title: "t".into(),
        url: url.into(),
        content: "c".into(),
        score: 0.0,
        kind,
        clear_match: false,
        from_graph: false,
        vector_rank: None,
    };
    let kb = KnowledgeBase::from_documents(&[
        doc("kb://a.md#1", DocKind::Episode),
        doc("kb://a.md#2", DocKind::Episode),
        doc("kb://nodes.jsonl#x", DocKind::Node),
    ])
    .unwrap();
    assert_eq!((kb.stats().documents, kb.stats().passages), (1, 2));
    assert_eq!(kb.len(), 3);
}
