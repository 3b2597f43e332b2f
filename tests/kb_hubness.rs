//! The vector ranking's hubness correction, in a bundle and in PostgreSQL alike: a passage
//! pointing where the whole corpus points (a hub) is nearest the question by plain cosine, but
//! the passage specific to the question is the vector ranking's first (`vector_rank` 1) once
//! the question loses a quarter of its component along the corpus's common direction
//! (`src/search/hybrid/hubness.rs`; the numbers are worked out below).
use crate::support;

use serde_json::Value;
use support::embeddings_server::{concept_vector, EmbedReply, ScriptedEmbeddings};
use support::kb_corpus::{in_bundle_and_postgres, ok, run};

/// Four one-line pages of the scripted concepts (0: canker words, 1: insect words, 2: fruit,
/// 3: water), each title one word outside them (0.05 on the last dimension):
/// `hub` (3, 0, 0, 0), `specific` (3, 4, 0, 0), `fruit` (3, 0, 1, 0), `water` (3, 0, 0, 1).
const PAGES: [(&str, &str); 4] = [
    ("hub.md", "canker bark trunk"),
    ("specific.md", "canker bark trunk insect pest bug ants"),
    ("fruity.md", "canker bark trunk fruit"),
    ("watery.md", "canker bark trunk water"),
];

/// 13 canker words and 6 insect words: (0.908, 0.419). By plain cosine the hub (0.908) leads
/// the specific page (0.880); the common direction is about (0.967, 0.221, 0.087, 0.087), and
/// less a quarter of the question's component along it, the specific page leads (0.696 to 0.673).
const QUESTION: &str = "canker canker canker canker canker canker canker canker canker canker \
                        canker canker canker insect insect insect insect insect insect";

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let n = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>() / (n(a) * n(b))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_specific_passage_is_nearest_in_every_store_not_the_hub() {
    // The premise: by plain cosine the hub is nearer.
    let q = concept_vector(QUESTION);
    let page = |name: &str, text: &str| concept_vector(&format!("{name}\n\n{text}"));
    assert!(cosine(&q, &page("hub", PAGES[0].1)) > cosine(&q, &page("specific", PAGES[1].1)));

    let embeddings = ScriptedEmbeddings::start([EmbedReply::vectors()]).await;
    let vectors = embeddings.env("concepts-7");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let pages = PAGES.map(|(name, text)| (name, text.to_owned()));
    for (store, location) in in_bundle_and_postgres(state, &vectors, &pages, "hubness").await {
        let mut env = vec![location, ("LLM_PROVIDER", "offline".to_owned())];
        env.extend(vectors.clone());
        let args = ["kb", "search", QUESTION, "--json", "--limit", "4"];
        let out: Value = serde_json::from_str(&ok(run(state, &env, &args))).unwrap();
        assert_eq!(out["mode"], "hybrid", "{store}");
        let nearest: Vec<&str> = out["documents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["vector_rank"] == 1)
            .map(|d| d["url"].as_str().unwrap())
            .collect();
        assert_eq!(nearest, ["kb://specific.md#1"], "{store}: {out}");
    }
}
