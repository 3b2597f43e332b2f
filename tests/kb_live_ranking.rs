//! The keep rules on the sync / live-refresh path: bundles with vectors published to S3
//! (moto) and served by [`LiveKnowledge`], before and after a refresh swaps in a new version,
//! over generated queries, query vectors, limits and kinds. What the live knowledge returns,
//! and how it says each passage ranked, is what the same bundle opened from its folder returns
//! (whose promises `kb::bundle::properties` tests), and the promises hold on it as seen from
//! outside: BM25's clear first passage is among the `k` passages for every `k`, and the vector
//! ranking's first for every `k ≥ 2`.
use crate::support;

use bounded_rag::kb::s3::{self, BundleStore};
use bounded_rag::kb::{KnowledgeBase, LiveKnowledge, LoadOptions, RefreshOutcome, Retriever};
use bounded_rag::search::{KeptBy, RetrievalOptions};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use std::path::Path;
use support::embeddings_server::{concept_vector, ScriptedEmbeddings};
use support::moto::{moto, unique_name};

const MODEL: &str = "concepts-7";
const WORDS: &[&str] = &[
    "canker",
    "bark",
    "insects",
    "mealybugs",
    "fruit",
    "rot",
    "drainage",
    "mulch",
    "leaf",
    "borer",
    "zorblat",
    "quench",
    "durian",
    "orchard",
];
/// Generated queries per version.
const CASES: u32 = 48;

/// Six documents of a few sections each, their words drawn from [`WORDS`] by position, so
/// BM25 scores and the concept vectors vary between passages; `extra` adds one more.
fn write_corpus(dir: &Path, extra: bool) {
    std::fs::create_dir_all(dir).unwrap();
    for doc in 0..6 + usize::from(extra) {
        let mut text = format!("# Notes {doc}\n\n");
        for section in 0..3 {
            let words: Vec<&str> = (0..90)
                .map(|i| WORDS[(doc * 7 + section * 3 + i * (doc + section + 1)) % WORDS.len()])
                .collect();
            // Each part also names its own part number, a word no other passage holds and the
            // vectors do not know: the clear BM25 lead a query naming it gets.
            text.push_str(&format!(
                "## Part {section}\n\n{}, part {}.\n\n",
                words.join(" "),
                part_number(doc, section)
            ));
        }
        std::fs::write(dir.join(format!("notes-{doc}.md")), text).unwrap();
    }
}

fn part_number(doc: usize, section: usize) -> String {
    format!("xr{doc}{section}q")
}

async fn bundle(server: &ScriptedEmbeddings, src: &Path, out: &Path) -> KnowledgeBase {
    server.ingest_bundle(MODEL, src, out).await
}

/// A generated search: query words, maybe a part number, a limit, passages only or every kind.
fn searches() -> impl Strategy<Value = (Vec<usize>, Option<(usize, usize)>, usize, bool)> {
    (
        proptest::collection::vec(0..WORDS.len(), 1..5),
        proptest::option::of((0usize..6, 0usize..3)),
        1usize..8,
        proptest::bool::ANY,
    )
}

/// `CASES` generated searches on `live` and on `local` (the same bundle, opened from its
/// folder): the same passages, rankings and order, and the leads kept.
async fn same_and_kept(live: &LiveKnowledge, local: &KnowledgeBase, runner: &mut TestRunner) {
    for _ in 0..CASES {
        let (words, part, limit, passages_only) = searches().new_tree(runner).unwrap().current();
        let mut query: Vec<String> = words.iter().map(|w| WORDS[*w].to_owned()).collect();
        query.extend(part.map(|(doc, section)| part_number(doc, section)));
        let query = query.join(" ");
        let vector = concept_vector(&query);
        let options = RetrievalOptions {
            limit,
            nodes: !passages_only,
            edges: !passages_only,
            ..RetrievalOptions::default()
        };
        let served = live.explain(&query, Some(&vector), &options).await.unwrap();
        let opened = local
            .explain(&query, Some(&vector), &options)
            .await
            .unwrap();
        assert_eq!(served, opened, "{query} (k = {limit})");
        assert_eq!(served.len(), limit.min(local.stats().passages), "{query}");

        let bm25 = local.retrieve(&query, &options).await.unwrap();
        let urls: Vec<&str> = served.iter().map(|e| e.document.url.as_str()).collect();
        if let Some(first) = bm25.first().filter(|d| d.clear_match) {
            assert!(
                urls.contains(&first.url.as_str()),
                "{query} (k = {limit}): {urls:?}"
            );
        }
        let nearest = served.iter().any(|e| {
            e.ranking
                .as_ref()
                .is_some_and(|r| r.vector.is_some_and(|v| v.rank == 1))
        });
        assert!(limit == 1 || nearest, "{query} (k = {limit}): {served:?}");
        // Those their rank kept come in the fused ranking's order.
        let by_rank: Vec<u32> = served
            .iter()
            .filter_map(|e| e.ranking.as_ref())
            .filter(|r| r.kept_by == KeptBy::Rank)
            .map(|r| r.rank.unwrap())
            .collect();
        assert!(by_rank.windows(2).all(|w| w[0] < w[1]), "{by_rank:?}");
    }
}

#[tokio::test]
async fn live_knowledge_keeps_the_leads_as_its_bundle_does_before_and_after_a_refresh() {
    let server = ScriptedEmbeddings::start([]).await;
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    write_corpus(&src, false);
    let v1 = bundle(&server, &src, &work.path().join("v1")).await;
    write_corpus(&src, true);
    let v2 = bundle(&server, &src, &work.path().join("v2")).await;

    let sdk = moto().await.sdk_config().await;
    let client = s3::client(&sdk);
    let bucket = unique_name("live").to_lowercase();
    client.create_bucket().bucket(&bucket).send().await.unwrap();
    let store = BundleStore::new(client, format!("s3://{bucket}/notes").parse().unwrap());
    let first = store
        .publish(&work.path().join("v1"))
        .await
        .unwrap()
        .version;
    let options = LoadOptions {
        refresh_every: None,
        ..LoadOptions::default()
    };
    let live = LiveKnowledge::open(store.clone(), options).await.unwrap();
    let mut runner = TestRunner::deterministic();
    same_and_kept(&live, &v1, &mut runner).await;

    let second = store
        .publish(&work.path().join("v2"))
        .await
        .unwrap()
        .version;
    assert_eq!(
        live.refresh().await.unwrap(),
        RefreshOutcome::Swapped {
            from: first,
            to: second
        }
    );
    same_and_kept(&live, &v2, &mut runner).await;
}
