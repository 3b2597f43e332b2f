//! A clear lexical match survives fusion: a passage that alone holds a question's rare words
//! (invented ones, as a part number or a protocol name is) leads BM25 clearly, while weak
//! vectors (the scripted concept embedding knows none of those words) rank it low and put
//! documents both rankers found at middling ranks ahead of it. With the BM25 ranking weighed
//! equally (as before its weight followed its lead), fusion ranked it out of the three passages
//! a request gets; now the few passages holding the question's words give BM25 more weight and
//! fusion keeps it itself (the rule that keeps a clear lead when fusion does not is
//! `hybrid::leads`' unit tests and properties). The hybrid search keeps it, marked a clear match, and a run
//! over it ends `completed` citing it.
use crate::support;

use bounded_rag::clock::{Clock, SystemClock};
use bounded_rag::embed::EmbeddingsClient;
use bounded_rag::engine::Budget;
use bounded_rag::kb::KnowledgeBase;
use bounded_rag::llm::OfflineModel;
use bounded_rag::rag::{Mode, RagGraph, RagLimits, RunRequest, RunStatus};
use bounded_rag::runs::Workflow;
use bounded_rag::search::RetrievalOptions;
use bounded_rag::store::MemoryStore;
use std::sync::Arc;
use support::embeddings_server::{concept_vector, ScriptedEmbeddings};

const MODEL: &str = "concepts-7";

/// Four fruit-rot protocols (words the question shares, and the concept its vector points
/// at), the one page that names the invented protocol (`quench.md`), and others; the same
/// folder `eval/rare_word_e5.sh` embeds with a real model.
fn corpus() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rare-word")
}

const QUESTION: &str = "Which fruit rot protocol uses zorblat quenching?";

fn client(server: &ScriptedEmbeddings) -> EmbeddingsClient {
    server.client(MODEL)
}

async fn bundle(server: &ScriptedEmbeddings, work: &std::path::Path) -> KnowledgeBase {
    server
        .ingest_bundle(MODEL, &corpus(), &work.join("bundle"))
        .await
}

fn urls(docs: &[bounded_rag::knowledge::Document]) -> Vec<String> {
    docs.iter().map(|d| d.url.clone()).collect()
}

#[tokio::test]
async fn a_rare_word_match_that_leads_bm25_clearly_is_never_ranked_out_by_fusion() {
    let server = ScriptedEmbeddings::start([]).await;
    let work = tempfile::tempdir().unwrap();
    let kb = bundle(&server, work.path()).await;
    let three = RetrievalOptions {
        limit: 3,
        ..RetrievalOptions::default()
    };
    let vector = concept_vector(QUESTION);

    // BM25: the page with the rare words first, a clear match.
    let bm25 = kb.search(QUESTION, &three).unwrap();
    assert_eq!(bm25[0].url, "kb://quench.md#1", "{:?}", urls(&bm25));
    assert!(bm25[0].clear_match);

    // Fusion ranks it among the three a request gets, marked a clear match, in the order of
    // the longer list.
    let all = RetrievalOptions {
        limit: 8,
        ..RetrievalOptions::default()
    };
    let fused = urls(&kb.search_hybrid(QUESTION, &vector, &all).unwrap());
    let at = fused.iter().position(|u| u == "kb://quench.md#1").unwrap();
    assert!(at < 3, "fusion ranks it at {at}: {fused:?}");
    let kept = kb.search_hybrid(QUESTION, &vector, &three).unwrap();
    assert_eq!(urls(&kept), fused[..3]);
    assert!(kept[at].clear_match);

    // A run over it (offline model, hybrid retrieval) answers citing it.
    let graph = RagGraph::new(
        Arc::new(OfflineModel),
        Arc::new(kb),
        None,
        RagLimits::default(),
    )
    .with_embedder(Arc::new(client(&server)));
    let store = MemoryStore::new();
    let workflow = Workflow::new(&graph, &store, &SystemClock);
    let mut request = RunRequest::new(QUESTION);
    request.mode = Mode::Balanced;
    let budget = Budget::new(50, SystemClock.now_ms() + 60_000);
    let run = workflow.run_new("rare", request, &budget).await.unwrap();
    assert_eq!(
        run.status,
        RunStatus::Completed,
        "{:?}",
        run.metadata.limits_hit
    );
    let cited: Vec<&str> = run.citations.iter().map(|c| c.url.as_str()).collect();
    assert!(cited.contains(&"kb://quench.md#1"), "{cited:?}");
}

/// The same corpus in a bundle and in PostgreSQL (directly), searched through the CLI with the
/// scripted vectors and without them: the page with the rare words is among the three every
/// time, marked a clear match, and `ask` (offline model) ends `completed` citing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_store_keeps_the_rare_word_match_with_vectors_and_without() {
    use serde_json::Value;
    use support::embeddings_server::EmbedReply;
    use support::kb_corpus::{ingest as ingest_cli, ok, run, search_passages};

    let embeddings = ScriptedEmbeddings::start([EmbedReply::vectors()]).await;
    let vectors = vec![
        ("EMBEDDINGS_BASE_URL", embeddings.base_url()),
        ("EMBEDDINGS_MODEL", MODEL.to_owned()),
    ];
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let corpus = corpus();
    let bundle = state.join("bundle");
    ingest_cli(state, &vectors, &corpus, bundle.to_str().unwrap());
    let pg = support::postgres::database("rare_word").await;
    ingest_cli(state, &vectors, &corpus, &pg);
    let stores = [
        ("bundle", ("KB_PATH", bundle.to_str().unwrap().to_owned())),
        ("postgres", ("KB_URI", pg.clone())),
    ];
    for (store, location) in &stores {
        for with_vectors in [true, false] {
            let mut env = vec![location.clone(), ("LLM_PROVIDER", "offline".to_owned())];
            if with_vectors {
                env.extend(vectors.clone());
            }
            let out = search_passages(state, &env, QUESTION, 3, None);
            let mode = if with_vectors { "hybrid" } else { "bm25" };
            assert_eq!(out["mode"], mode, "{store}");
            let docs = out["documents"].as_array().unwrap();
            let quench = docs
                .iter()
                .find(|d| d["url"] == "kb://quench.md#1")
                .unwrap_or_else(|| panic!("{store} ({mode}) lost it: {out}"));
            assert_eq!(quench["clear_match"], true, "{store} ({mode}): {out}");

            let asked: Value =
                serde_json::from_str(&ok(run(state, &env, &["ask", QUESTION, "--json"]))).unwrap();
            assert_eq!(asked["status"], "completed", "{store} ({mode}): {asked}");
            let cited: Vec<&str> = asked["citations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["url"].as_str().unwrap())
                .collect();
            assert!(
                cited.contains(&"kb://quench.md#1"),
                "{store} ({mode}): {cited:?}"
            );
        }
    }
}
