//! The rerank stage through a scripted `/rerank` server on loopback: the request's shape,
//! exact call counts, one retry on a 503, none on a 400 (which falls back to the fused order,
//! visibly), and `metadata.retrieval` naming `bm25+rerank` / `hybrid+rerank`.
use crate::support;

use crate::support::happy_path::QUESTION;
use bounded_rag::clock::{Clock, SystemClock};
use bounded_rag::embed::{EmbeddingsClient, EmbeddingsConfig};
use bounded_rag::engine::Budget;
use bounded_rag::ingest::{ingest, IngestOptions};
use bounded_rag::kb::KnowledgeBase;
use bounded_rag::llm::OfflineModel;
use bounded_rag::rag::{Mode, RagGraph, RagLimits, RunRequest, RunResponse};
use bounded_rag::runs::Workflow;
use bounded_rag::search::{RerankClient, RerankConfig, RetrievalMode, RetrievalOptions};
use bounded_rag::secrets::Secret;
use bounded_rag::store::MemoryStore;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use support::embeddings_server::ScriptedEmbeddings;
use support::rerank_server::{RerankReply, ScriptedRerank};

fn reranker(server: &ScriptedRerank) -> Arc<RerankClient> {
    Arc::new(
        RerankClient::new(RerankConfig {
            base_url: server.base_url(),
            model: Some("rerank-test".into()),
            api_key: Some(Secret::new("rk-test")),
        })
        .unwrap(),
    )
}

async fn run(graph: &RagGraph) -> RunResponse {
    let store = MemoryStore::new();
    let workflow = Workflow::new(graph, &store, &SystemClock);
    let mut request = RunRequest::new(QUESTION);
    request.mode = Mode::Speed;
    let budget = Budget::new(50, SystemClock.now_ms() + 60_000);
    workflow.run_new("run", request, &budget).await.unwrap()
}

fn retrieval_step(response: &RunResponse) -> &Value {
    &response
        .workflow_steps
        .iter()
        .find(|s| s.name == "kg_retrieval")
        .unwrap()
        .details
}

fn sources(response: &RunResponse) -> Vec<String> {
    retrieval_step(response)["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// The 20 candidates the reranker chooses from, in the retriever's order.
fn candidates(kb: &KnowledgeBase) -> Vec<String> {
    let options = RetrievalOptions {
        limit: 20,
        ..RetrievalOptions::default()
    };
    kb.search(QUESTION, &options)
        .unwrap()
        .into_iter()
        .map(|d| d.url)
        .collect()
}

#[tokio::test]
async fn a_rerank_reorders_the_candidates_as_one_counted_call_retried_once_on_503() {
    let server = ScriptedRerank::start([RerankReply::status(503), RerankReply::reversed()]).await;
    let kb = Arc::new(bounded_rag::ingest::sample_kb().unwrap());
    let plain = RagGraph::new(
        Arc::new(OfflineModel),
        kb.clone(),
        None,
        RagLimits::default(),
    )
    .with_remote_policy(support::embeddings_server::no_wait());
    let reranked = plain.clone().with_reranker(reranker(&server));

    let before = run(&plain).await;
    assert_eq!(before.metadata.retrieval, Some(RetrievalMode::Bm25));
    let after = run(&reranked).await;
    assert_eq!(after.metadata.retrieval, Some(RetrievalMode::Bm25Rerank));
    assert_eq!(
        serde_json::to_value(after.metadata.retrieval).unwrap(),
        "bm25+rerank"
    );
    assert_eq!(retrieval_step(&after)["retrieval"], "bm25+rerank");
    assert_eq!(server.total_calls(), 2, "one retry of the 503");
    assert_eq!(after.metadata.infrastructure_retries, 1);
    assert_eq!(
        after.metadata.model_calls,
        before.metadata.model_calls + 1,
        "the answered rerank is one model call"
    );

    let call = server.last().unwrap();
    assert_eq!(call.authorization.as_deref(), Some("Bearer rk-test"));
    assert_eq!(call.body["query"], QUESTION);
    assert_eq!(call.body["model"], "rerank-test");
    assert_eq!(call.body["top_n"], 3, "n_retrieved_documents");
    let candidates = candidates(&kb);
    assert_eq!(
        call.body["documents"].as_array().unwrap().len(),
        candidates.len()
    );
    let reversed: Vec<String> = candidates.iter().rev().take(3).cloned().collect();
    assert_eq!(
        sources(&after),
        reversed,
        "the reranker's order, best three"
    );
}

#[tokio::test]
async fn a_400_is_not_retried_and_the_fused_order_is_kept_visibly() {
    let server = ScriptedRerank::start([RerankReply::status(400)]).await;
    let kb = Arc::new(bounded_rag::ingest::sample_kb().unwrap());
    let graph = RagGraph::new(
        Arc::new(OfflineModel),
        kb.clone(),
        None,
        RagLimits::default(),
    )
    .with_remote_policy(support::embeddings_server::no_wait())
    .with_reranker(reranker(&server));
    let response = run(&graph).await;
    assert_eq!(server.total_calls(), 1, "a 4xx is never retried");
    assert_eq!(response.metadata.infrastructure_retries, 0);
    assert_eq!(response.metadata.retrieval, Some(RetrievalMode::Bm25));
    let step = retrieval_step(&response);
    let failed = step["rerank_failed"].as_str().unwrap();
    assert!(failed.contains("HTTP 400"), "{failed}");
    let fused: Vec<String> = candidates(&kb).into_iter().take(3).collect();
    assert_eq!(sources(&response), fused);
    assert!(!response.answer.is_empty());
}

#[tokio::test]
async fn a_hybrid_retrieval_is_reranked_too() {
    let embeddings = ScriptedEmbeddings::start([]).await;
    let rerank = ScriptedRerank::start([]).await;
    let work = tempfile::tempdir().unwrap();
    let embedder = EmbeddingsClient::new(EmbeddingsConfig {
        base_url: embeddings.base_url(),
        model: "concepts-7".into(),
        api_key: None,
    })
    .unwrap();
    let out = work.path().join("bundle");
    let kb_dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/kb"));
    let options = IngestOptions {
        embedder: Some(&embedder),
        ..IngestOptions::default()
    };
    ingest(kb_dir, &out, &options).await.unwrap();
    let kb = Arc::new(bounded_rag::ingest::load_kb(&out).unwrap());
    let graph = RagGraph::new(Arc::new(OfflineModel), kb, None, RagLimits::default())
        .with_embedder(Arc::new(embedder))
        .with_reranker(reranker(&rerank))
        .with_remote_policy(support::embeddings_server::no_wait());
    let response = run(&graph).await;
    assert_eq!(
        response.metadata.retrieval,
        Some(RetrievalMode::HybridRerank)
    );
    assert_eq!(rerank.total_calls(), 1);
    assert_eq!(sources(&response).len(), 3);
}
