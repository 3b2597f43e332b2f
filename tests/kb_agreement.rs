//! BM25's weight in the fusion follows its agreement with the vectors, in a bundle and in
//! PostgreSQL alike (`fusion::agreement`, and the same expression in the hybrid statement): the
//! share of BM25's first hits whose document has a passage among the vector ranking's 50
//! candidates. Here BM25 finds four pages (fewer than ten, so its own lead weight is 2); two of
//! them are among the vectors' 50 and two are not, so its weight is 2 × 2/4 = 1, and a page only
//! BM25 found scores `1 / (20 + rank)`, where a weight of 2 would give it `2 / (20 + rank)`.
use crate::support;

use serde_json::Value;
use support::embeddings_server::{EmbedReply, ScriptedEmbeddings};
use support::kb_corpus::{in_bundle_and_postgres, search_passages};

/// Leaf words of the scripted concepts, none of them the pages' ("leaves", "spot").
const QUESTION: &str = "Why do leaves spot?";

/// 48 pages of leaf words only (nearest the question, no word of it); two that hold the
/// question's words among fruit words (the vectors' 49th and 50th); two that hold them among
/// many insect words (far from the question by meaning: past the vectors' 50).
fn pages() -> Vec<(String, String)> {
    let mut pages: Vec<(String, String)> = (0..48)
        .map(|i| {
            let leafy = ["foliage anthracnose", "anthracnose foliage foliage"][i % 2];
            (format!("leafy-{i:02}.md"), leafy.to_owned())
        })
        .collect();
    for (name, text) in [
        ("husk.md", "leaves spot fruit rot"),
        ("ripening.md", "leaves spot fruit husk"),
        (
            "mealybug.md",
            "leaves spot insect insects pest pests bug bugs mealybug ants",
        ),
        (
            "ants.md",
            "leaves spot ants ants insect pest mealybugs bugs bug insects",
        ),
    ] {
        pages.push((name.to_owned(), text.to_owned()));
    }
    pages
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bm25_pages_the_vectors_never_reach_weigh_half_in_every_store() {
    let embeddings = ScriptedEmbeddings::start([EmbedReply::vectors()]).await;
    let vectors = embeddings.env("concepts-7");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let owned = pages();
    let pages: Vec<(&str, String)> = owned.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
    for (store, location) in in_bundle_and_postgres(state, &vectors, &pages, "agreement").await {
        let mut env = vec![location];
        env.extend(vectors.clone());
        let out = search_passages(state, &env, QUESTION, 20, None);
        assert_eq!(out["mode"], "hybrid", "{store}");
        let docs = out["documents"].as_array().unwrap();
        let at = |url: &str| {
            docs.iter()
                .position(|d| d["url"] == url)
                .unwrap_or_else(|| panic!("{store}: no {url}: {out}"))
        };
        let score = |url: &str| docs[at(url)]["score"].as_f64().unwrap();
        // Found by BM25 alone (two of its four): weight 1, so `1 / (20 + rank)`.
        for url in ["kb://ants.md#1", "kb://mealybug.md#1"] {
            assert_eq!(docs[at(url)]["vector_rank"], Value::Null, "{store}: {url}");
            let weight = [21.0, 22.0, 23.0, 24.0].map(|k| score(url) * k);
            assert!(
                weight.iter().any(|w| (w - 1.0).abs() < 1e-4),
                "{store}: {url} weighs {weight:?}: {out}"
            );
            // At weight 2 they would lead every page the vectors alone found; at 1, the
            // vectors' first (`1 / 21`) ranks above them.
            let nearest = docs.iter().position(|d| d["vector_rank"] == 1).unwrap();
            assert!(nearest < at(url), "{store}: {out}");
        }
    }
}
