//! Embeddings end to end against a scripted `/v1/embeddings` server: ingest embeds every
//! passage in batches and resumes after an interruption with exactly the remaining batches;
//! a hybrid search fuses the BM25 and vector rankings; a hybrid run embeds its question once,
//! as a counted and retried model call.
use crate::support;

use bounded_rag::clock::{Clock, SystemClock};
use bounded_rag::engine::Budget;
use bounded_rag::ingest::{ingest, IngestError, IngestOptions};
use bounded_rag::kb::{check_compatible, KnowledgeBase};
use bounded_rag::knowledge::DocKind;
use bounded_rag::llm::OfflineModel;
use bounded_rag::rag::{Mode, RagGraph, RagLimits, RunRequest, RunResponse};
use bounded_rag::runs::Workflow;
use bounded_rag::search::{RetrievalMode, RetrievalOptions};
use bounded_rag::store::MemoryStore;
use std::path::Path;
use std::sync::Arc;
use support::embeddings_server::{concept_vector, EmbedReply, ScriptedEmbeddings, DIMS};

const MODEL: &str = "concepts-7";

/// Ten one-passage documents. `gummosis.md` talks about the canker with none of the words of
/// [`BARK_QUESTION`].
const DOCS: &[(&str, &str)] = &[
    ("canker.md", "# Patch canker\n\nDark lesions form on the trunk bark and ooze; the bark lesions widen in wet seasons."),
    ("gummosis.md", "# Gummosis\n\nAmber gum weeps from cracks once phytophthora takes hold; phosphonate injections stop it."),
    ("mealybugs.md", "# Mealybugs\n\nWhite insects cluster on fruit stalks and ants farm them for honeydew."),
    ("fruit-rot.md", "# Fruit rot\n\nThe husk darkens and the fruit rots before ripening is complete."),
    ("drainage.md", "# Drainage\n\nRaised beds and mulch keep roots out of standing water after rain."),
    ("leaf-spot.md", "# Leaf spot\n\nBrown spots spread across the leaves and the foliage thins."),
    ("stem-borer.md", "# Stem borer\n\nLarvae dig tunnels inside branches and push out frass."),
    ("seed-borer.md", "# Seed borer\n\nA caterpillar eats the seeds inside the husk without a visible mark."),
    ("psyllid.md", "# Psyllid\n\nTiny sap suckers curl the young flush and leave sooty mould."),
    ("pruning.md", "# Pruning\n\nOpen the canopy after harvest so air moves through the crown."),
];

const BARK_QUESTION: &str = "How do I treat bark lesions?";

/// Ingests [`DOCS`] with embeddings into `out`.
async fn embedded_bundle(server: &ScriptedEmbeddings, work: &Path) -> KnowledgeBase {
    let src = work.join("src");
    support::write_files(&src, DOCS);
    let embedder = server.client(MODEL);
    let options = IngestOptions {
        embedder: Some(&embedder),
        batch_size: 4,
        retry: support::embeddings_server::no_wait(),
        ..IngestOptions::default()
    };
    let out = work.join("bundle");
    ingest(&src, &out, &options).await.unwrap();
    bounded_rag::ingest::load_kb(&out).unwrap()
}

#[tokio::test]
async fn an_interrupted_embedding_ingest_resumes_with_exactly_the_remaining_batches() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    support::write_files(&src, DOCS);
    let out = work.path().join("bundle");
    // Batches of 3: ten passages are four batches (3, 3, 3, 1). The first batch fails once
    // with a 503 (retried), the third with a 400 (not retried): the ingest stops.
    let server = ScriptedEmbeddings::start([
        EmbedReply::status(503),
        EmbedReply::vectors(),
        EmbedReply::vectors(),
        EmbedReply::status(400),
    ])
    .await;
    let embedder = server.client(MODEL);
    let options = IngestOptions {
        embedder: Some(&embedder),
        batch_size: 3,
        retry: support::embeddings_server::no_wait(),
        ..IngestOptions::default()
    };
    let err = ingest(&src, &out, &options).await.unwrap_err();
    assert!(
        matches!(
            err,
            IngestError::Interrupted {
                done: 6,
                total: 10,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("resumes"), "{err}");
    assert!(
        !out.exists(),
        "nothing half-written where a reader could load it"
    );
    let first_run = server.batches();
    assert_eq!(
        first_run.len(),
        4,
        "503 + retry, second batch, the failing third"
    );
    let done: Vec<String> = first_run[1].iter().chain(&first_run[2]).cloned().collect();

    server.clear();
    server.script([EmbedReply::vectors()]);
    let summary = ingest(&src, &out, &options).await.unwrap();
    let resumed = server.batches();
    assert_eq!(
        resumed.iter().map(Vec::len).collect::<Vec<_>>(),
        [3, 1],
        "exactly the remaining batches"
    );
    assert!(resumed.iter().flatten().all(|text| !done.contains(text)));
    assert_eq!((summary.embedded, summary.embedding_calls), (4, 2));
    let embedding = summary.manifest.embedding.clone().unwrap();
    assert_eq!(
        (embedding.model.as_str(), embedding.dimensions),
        (MODEL, DIMS)
    );
    assert!(
        !work.path().join(".bundle.partial").exists(),
        "staging removed"
    );

    // The resumed bundle is the one an uninterrupted ingest writes.
    let fresh = tempfile::tempdir().unwrap();
    let again = embedded_bundle(&server, fresh.path()).await;
    assert_eq!(again.version(), summary.manifest.content_hash);
    // Every passage text was embedded exactly once over both runs.
    let mut all: Vec<String> = done
        .into_iter()
        .chain(resumed.into_iter().flatten())
        .collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 10);
}

#[tokio::test]
async fn hybrid_ranking_fuses_the_bm25_and_vector_lists() {
    let server = ScriptedEmbeddings::start([]).await;
    let work = tempfile::tempdir().unwrap();
    let kb = embedded_bundle(&server, work.path()).await;
    let options = RetrievalOptions {
        limit: 5,
        ..RetrievalOptions::default()
    };
    let url = |d: &bounded_rag::knowledge::Document| d.url.clone();

    let bm25: Vec<String> = kb
        .search(BARK_QUESTION, &options)
        .unwrap()
        .iter()
        .map(url)
        .collect();
    assert_eq!(
        bm25,
        ["kb://canker.md#1"],
        "only the canker passage shares words"
    );

    let hybrid = kb
        .search_hybrid(BARK_QUESTION, &concept_vector(BARK_QUESTION), &options)
        .unwrap();
    let fused: Vec<String> = hybrid.iter().map(url).collect();
    assert_eq!(fused.len(), 5);
    // In both lists: first fused, with RRF's sum of two terms (more than any one list
    // gives), and a clear match (top three of both).
    assert_eq!(fused[0], "kb://canker.md#1");
    assert!(hybrid[0].clear_match);
    assert!(
        hybrid[0].score > 1.0 / 21.0 + 1.0 / 71.0,
        "{}",
        hybrid[0].score
    );
    // Found by the vectors alone (same concept, other words), ranked first by them: RRF
    // gives it 1/(20 + 1).
    let gummosis = hybrid
        .iter()
        .find(|d| d.url == "kb://gummosis.md#1")
        .unwrap();
    assert!(
        (gummosis.score - 1.0 / 21.0).abs() < 1e-6,
        "{}",
        gummosis.score
    );
    assert_eq!(fused[1], "kb://gummosis.md#1");
    // The vectors' first carries rank 1 (the offline grader keeps the first three whatever
    // their words), and only ranks 1 to 3 are given.
    assert!(gummosis.vector_rank == Some(1) && !gummosis.clear_match);
    assert_eq!(
        hybrid.iter().filter(|d| d.vector_rank == Some(1)).count(),
        1
    );
    assert!(hybrid
        .iter()
        .all(|d| d.vector_rank.is_none_or(|r| (1..=3).contains(&r))));
    assert!(hybrid.windows(2).all(|w| w[0].score >= w[1].score));

    // The kind toggles still hold: without passages there is no vector ranking.
    let no_passages = RetrievalOptions {
        episodes: false,
        ..options
    };
    let hits = kb
        .search_hybrid(BARK_QUESTION, &concept_vector(BARK_QUESTION), &no_passages)
        .unwrap();
    assert!(hits.iter().all(|d| d.kind != DocKind::Episode));

    // A function configured for another model refuses this bundle.
    let err = check_compatible(&kb, Some("other-model")).unwrap_err();
    assert!(err.to_string().contains("incompatible bundle"), "{err}");
    check_compatible(&kb, Some(MODEL)).unwrap();
}

async fn run(graph: &RagGraph, question: &str) -> RunResponse {
    let store = MemoryStore::new();
    let workflow = Workflow::new(graph, &store, &SystemClock);
    let mut request = RunRequest::new(question);
    request.mode = Mode::Speed;
    let budget = Budget::new(50, SystemClock.now_ms() + 60_000);
    workflow.run_new("run", request, &budget).await.unwrap()
}

#[tokio::test]
async fn a_hybrid_run_embeds_its_question_once_as_a_counted_retried_model_call() {
    let server = ScriptedEmbeddings::start([]).await;
    let work = tempfile::tempdir().unwrap();
    let kb: Arc<KnowledgeBase> = Arc::new(embedded_bundle(&server, work.path()).await);
    let bm25_graph = RagGraph::new(
        Arc::new(OfflineModel),
        kb.clone(),
        None,
        RagLimits::default(),
    );
    let hybrid_graph = bm25_graph
        .clone()
        .with_embedder(Arc::new(server.client(MODEL)))
        .with_remote_policy(support::embeddings_server::no_wait());

    let bm25 = run(&bm25_graph, BARK_QUESTION).await;
    assert_eq!(bm25.metadata.retrieval, Some(RetrievalMode::Bm25));

    server.clear();
    server.script([EmbedReply::status(503), EmbedReply::vectors()]);
    let hybrid = run(&hybrid_graph, BARK_QUESTION).await;
    assert_eq!(hybrid.metadata.retrieval, Some(RetrievalMode::Hybrid));
    assert_eq!(hybrid.metadata.kb_version.as_deref(), Some(kb.version()));
    assert_eq!(
        server.batches(),
        vec![vec![BARK_QUESTION.to_owned()]; 2],
        "one retry"
    );
    assert_eq!(hybrid.metadata.infrastructure_retries, 1);
    assert_eq!(
        hybrid.metadata.model_calls,
        bm25.metadata.model_calls + 1,
        "the successful embedding is one model call"
    );
    assert!(hybrid.metadata.tokens.total > bm25.metadata.tokens.total);
    let step = hybrid
        .workflow_steps
        .iter()
        .find(|s| s.name == "kg_retrieval")
        .unwrap();
    assert_eq!(step.details["retrieval"], "hybrid");
    assert_eq!(step.details["sources"][0], "kb://canker.md#1");
    assert_eq!(step.details["sources"][1], "kb://gummosis.md#1");
    assert_eq!(
        step.details["from_graph"], 0,
        "no entities, no graph neighbours"
    );
}

#[tokio::test]
async fn a_hybrid_search_adds_the_matched_entity_neighbourhood_too() {
    let server = ScriptedEmbeddings::start([]).await;
    let work = tempfile::tempdir().unwrap();
    let embedder = server.client(MODEL);
    let options = IngestOptions {
        embedder: Some(&embedder),
        retry: support::embeddings_server::no_wait(),
        ..IngestOptions::default()
    };
    let out = work.path().join("bundle");
    let kb_dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/kb"));
    ingest(kb_dir, &out, &options).await.unwrap();
    let kb = bounded_rag::ingest::load_kb(&out).unwrap();
    let question = "What does Phytophthora palmivora cause?";
    let community = "kb://communities.jsonl#phytophthora_complex";
    for communities in [false, true] {
        let options = RetrievalOptions {
            limit: 10,
            nodes: true,
            edges: true,
            episodes: true,
            communities,
            filter: None,
        };
        let docs = kb
            .search_hybrid(question, &concept_vector(question), &options)
            .unwrap();
        assert!(docs.len() <= 10);
        let urls: Vec<&str> = docs.iter().map(|d| d.url.as_str()).collect();
        let unique: std::collections::HashSet<&str> = urls.iter().copied().collect();
        assert_eq!(unique.len(), urls.len(), "{urls:?}");
        assert!(!docs[0].from_graph, "a direct hit leads");
        // The entity is a BM25 candidate outside the fused ten: its relations still join,
        // after the first half of the limit.
        for edge in 1..=4 {
            let edge = format!("kb://edges.jsonl#{edge}");
            assert!(urls[5..].contains(&edge.as_str()), "{urls:?}");
        }
        assert_eq!(urls.contains(&community), communities, "{urls:?}");
        assert!(docs
            .iter()
            .all(|d| !d.from_graph || d.kind != DocKind::Episode));
    }
}
