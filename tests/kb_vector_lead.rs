//! The vector ranking's lead, in a bundle and in PostgreSQL alike: the passage nearest the
//! question by meaning, which shares none of its words, is never ranked out of the passages a
//! request gets by passages both rankers found at middling ranks (`hybrid::leads`), and
//! every kept passage of one of the vector ranking's first three documents carries its
//! document's rank (`Document::vector_rank`), not only the document's nearest passage.
use crate::support;

use serde_json::Value;
use support::embeddings_server::{EmbedReply, ScriptedEmbeddings};
use support::kb_corpus::{in_bundle_and_postgres, search_passages};

/// The question's words are leaf words of the scripted concepts ("leaves", "spot"); so are
/// `foliage.md`'s, `leafy.md`'s and `care.md`'s first section's, but none of them is the
/// question's, so full text finds only the pages that hold "leaves spot" among other concepts'
/// words: `care.md`'s second section and three pages of one line.
const QUESTION: &str = "Why do leaves spot?";

fn pages() -> Vec<(&'static str, String)> {
    let repeat = |words: &str, times: usize| vec![words; times].join(" ");
    vec![
        ("foliage.md", repeat("foliage anthracnose", 10)),
        ("leafy.md", repeat("foliage anthracnose foliage rot", 10)),
        (
            "care.md",
            format!(
                "# Care\n\n{}\n\n## Spots\n\n{}",
                repeat("anthracnose foliage fruit", 30),
                repeat("leaves spot canker bark", 25)
            ),
        ),
        ("husk.md", "leaves spot fruit rot husk".to_owned()),
        ("drain.md", "leaves spot water drainage rain".to_owned()),
        (
            "bark.md",
            "leaves spot canker bark trunk lesion ooze".to_owned(),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_nearest_document_is_kept_and_its_passages_carry_its_rank_in_every_store() {
    let embeddings = ScriptedEmbeddings::start([EmbedReply::vectors()]).await;
    let vectors = embeddings.env("concepts-7");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let stores = in_bundle_and_postgres(state, &vectors, &pages(), "vector_lead").await;
    for (store, location) in stores {
        let mut env = vec![location, ("LLM_PROVIDER", "offline".to_owned())];
        env.extend(vectors.clone());
        let search = |limit: usize| -> Vec<(String, Value)> {
            let out = search_passages(state, &env, QUESTION, limit, None);
            assert_eq!(out["mode"], "hybrid", "{store}");
            out["documents"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| {
                    (
                        d["url"].as_str().unwrap().to_owned(),
                        d["vector_rank"].clone(),
                    )
                })
                .collect()
        };
        // All of them: the four full-text hits first (each in both rankings), then the
        // vector-only passages, `foliage.md` (the vectors' first) fifth.
        let all = search(10);
        let urls: Vec<&str> = all.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(urls.len(), 7, "{store}: {all:?}");
        let lexical = [
            "kb://care.md#2",
            "kb://husk.md#1",
            "kb://drain.md#1",
            "kb://bark.md#1",
        ];
        assert!(
            lexical.iter().all(|u| urls[..4].contains(u)),
            "{store}: {all:?}"
        );
        assert_eq!(urls[4], "kb://foliage.md#1", "{store}: {all:?}");
        // The first three documents by meaning carry their rank on every kept passage: both
        // of `care.md`'s (its second is the vectors' fourth passage), none of the others.
        let rank = |url: &str| all.iter().find(|(u, _)| u == url).unwrap().1.clone();
        assert_eq!(rank("kb://foliage.md#1"), 1, "{store}: {all:?}");
        assert_eq!(rank("kb://leafy.md#1"), 2, "{store}: {all:?}");
        assert_eq!(rank("kb://care.md#1"), 3, "{store}: {all:?}");
        assert_eq!(rank("kb://care.md#2"), 3, "{store}: {all:?}");
        for url in ["kb://husk.md#1", "kb://drain.md#1", "kb://bark.md#1"] {
            assert_eq!(rank(url), Value::Null, "{store}: {url}");
        }
        // Three asked for: fusion ranks `foliage.md` out, and it takes the last place.
        let three = search(3);
        let kept: Vec<&str> = three.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(kept[..2], urls[..2], "{store}: {three:?}");
        assert_eq!(kept[2], "kb://foliage.md#1", "{store}: {three:?}");
    }
}
