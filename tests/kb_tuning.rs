//! Embedding ingest tuned for the server at hand, against a scripted `/v1/embeddings` server:
//! `EMBEDDINGS_BATCH_SIZE` batches exactly, `EMBEDDINGS_CONCURRENCY` batches in flight at
//! once, the passage prefix sent at ingest and the query prefix recorded in the manifest and
//! used by a hybrid run, and a timeout that names the setting to raise.
use crate::support;

use bounded_rag::clock::{Clock, SystemClock};
use bounded_rag::engine::Budget;
use bounded_rag::ingest::{ingest, IngestError, IngestOptions};
use bounded_rag::kb::format::Manifest;
use bounded_rag::llm::OfflineModel;
use bounded_rag::rag::{Mode, RagGraph, RagLimits, RunRequest};
use bounded_rag::retry::RetryPolicy;
use bounded_rag::runs::Workflow;
use bounded_rag::search::RetrievalMode;
use bounded_rag::store::MemoryStore;
use std::collections::HashSet;
use std::fs;
use std::sync::Arc;
use std::time::Duration;
use support::embeddings_server::{EmbedReply, ScriptedEmbeddings};

const MODEL: &str = "e5-ish";

/// Seven one-passage documents.
const DOCS: &[(&str, &str)] = &[
    (
        "a.md",
        "# Canker\n\nDark lesions form on the trunk bark and ooze.",
    ),
    (
        "b.md",
        "# Mealybugs\n\nWhite insects cluster on fruit stalks.",
    ),
    (
        "c.md",
        "# Fruit rot\n\nThe husk darkens and the fruit rots.",
    ),
    (
        "d.md",
        "# Drainage\n\nRaised beds keep roots out of standing water.",
    ),
    (
        "e.md",
        "# Leaf spot\n\nBrown spots spread across the leaves.",
    ),
    (
        "f.md",
        "# Stem borer\n\nLarvae dig tunnels inside branches.",
    ),
    ("g.md", "# Pruning\n\nOpen the canopy after harvest."),
];

#[tokio::test]
async fn batches_follow_the_batch_size_and_prefixes_are_sent_and_recorded() {
    let server = ScriptedEmbeddings::start([]).await;
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    support::write_files(&src, DOCS);
    let out = work.path().join("bundle");
    let embedder = server.client(MODEL);
    let options = IngestOptions {
        embedder: Some(&embedder),
        batch_size: 3,
        retry: support::embeddings_server::no_wait(),
        passage_prefix: "passage: ".into(),
        query_prefix: "query: ".into(),
        ..IngestOptions::default()
    };
    let summary = ingest(&src, &out, &options).await.unwrap();
    let batches = server.batches();
    assert_eq!(
        batches.iter().map(Vec::len).collect::<Vec<_>>(),
        [3, 3, 1],
        "seven passages in batches of three"
    );
    assert!(batches.iter().flatten().all(|t| t.starts_with("passage: ")));
    assert_eq!((summary.embedded, summary.embedding_calls), (7, 3));
    let manifest = Manifest::parse(&fs::read(out.join("kb-manifest.json")).unwrap(), &out).unwrap();
    let embedding = manifest.embedding.unwrap();
    assert_eq!(embedding.query_prefix, "query: ");
    assert_eq!(embedding.passage_prefix, "passage: ");

    // A hybrid run embeds its question with the bundle's query prefix.
    server.clear();
    let kb = Arc::new(bounded_rag::ingest::load_kb(&out).unwrap());
    let graph = RagGraph::new(Arc::new(OfflineModel), kb, None, RagLimits::default())
        .with_embedder(Arc::new(server.client(MODEL)))
        .with_remote_policy(support::embeddings_server::no_wait());
    let store = MemoryStore::new();
    let workflow = Workflow::new(&graph, &store, &SystemClock);
    let mut request = RunRequest::new("What causes bark lesions?");
    request.mode = Mode::Speed;
    let budget = Budget::new(50, SystemClock.now_ms() + 60_000);
    let response = workflow.run_new("run", request, &budget).await.unwrap();
    assert_eq!(response.metadata.retrieval, Some(RetrievalMode::Hybrid));
    assert_eq!(
        server.batches(),
        vec![vec!["query: What causes bark lesions?".to_owned()]]
    );
}

#[tokio::test]
async fn concurrent_batches_are_in_flight_together_and_resume_still_works() {
    // Every reply waits, so batches sent together overlap: each needs its own connection.
    let slow = || EmbedReply::vectors().delayed(Duration::from_millis(300));
    let server = ScriptedEmbeddings::start([slow()]).await;
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    support::write_files(&src, DOCS);
    let out = work.path().join("bundle");
    let embedder = server.client(MODEL);
    let options = IngestOptions {
        embedder: Some(&embedder),
        batch_size: 3,
        concurrency: 3,
        retry: support::embeddings_server::no_wait(),
        ..IngestOptions::default()
    };
    let summary = ingest(&src, &out, &options).await.unwrap();
    let calls: Vec<_> = server.recorded();
    let mut sizes: Vec<usize> = server.batches().iter().map(Vec::len).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [1, 3, 3]);
    let peers: HashSet<_> = calls.iter().map(|c| c.peer).collect();
    assert_eq!(peers.len(), 3, "three batches in flight at once");
    assert_eq!((summary.embedded, summary.embedding_calls), (7, 3));

    // One at a time: the three batches reuse one connection.
    server.clear();
    server.script([EmbedReply::vectors()]);
    let sequential = IngestOptions {
        concurrency: 1,
        passage_prefix: "p: ".into(),
        ..options
    };
    ingest(&src, &work.path().join("again"), &sequential)
        .await
        .unwrap();
    let peers: HashSet<_> = server.recorded().iter().map(|c| c.peer).collect();
    assert_eq!((server.batches().len(), peers.len()), (3, 1));
}

#[tokio::test]
async fn a_timed_out_batch_names_the_setting_to_raise_and_the_ingest_resumes() {
    let server = ScriptedEmbeddings::start([
        EmbedReply::vectors(),
        EmbedReply::vectors().delayed(Duration::from_secs(5)),
    ])
    .await;
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    support::write_files(&src, DOCS);
    let out = work.path().join("bundle");
    let embedder = server.client(MODEL);
    let options = IngestOptions {
        embedder: Some(&embedder),
        batch_size: 3,
        call_timeout: Duration::from_millis(200),
        retry: RetryPolicy {
            max_retries: 0,
            ..support::embeddings_server::no_wait()
        },
        ..IngestOptions::default()
    };
    let err = ingest(&src, &out, &options).await.unwrap_err();
    assert!(
        matches!(
            err,
            IngestError::Interrupted {
                done: 3,
                total: 7,
                ..
            }
        ),
        "{err}"
    );
    let text = err.to_string();
    assert!(text.contains("raise EMBEDDINGS_TIMEOUT_MS"), "{text}");
    assert!(text.contains("timed out after 200 ms"), "{text}");
    assert!(!text.contains(&src.display().to_string()), "{text}");

    server.clear();
    server.script([EmbedReply::vectors()]);
    let summary = ingest(&src, &out, &options).await.unwrap();
    assert_eq!(
        server.batches().iter().map(Vec::len).collect::<Vec<_>>(),
        [3, 1]
    );
    assert_eq!(summary.embedded, 4);
}
