//! The largest checkpoint a run makes stays well inside DynamoDB's item limit: a run over long
//! passages (every one of the 10 retrieved at the passage cap of 250 words), whose answer is
//! regenerated twice and whose query is rewritten to the limit, with its trail (a patch per
//! step, for forks). The figures are printed; the bound asserted is the store's inline limit
//! (350 KB, before compression), the point past which it would split the body into chunks.

use crate::support;

use bounded_rag::clock::{Clock, SystemClock};
use bounded_rag::engine::{Budget, RewindError};
use bounded_rag::ingest::{ingest, IngestOptions};
use bounded_rag::llm::{OpenAiConfig, OpenAiModel};
use bounded_rag::rag::{RagCheckpoint, RagGraph, RagLimits, RunRequest, RunStatus};
use bounded_rag::runs::Workflow;
use bounded_rag::store::{CheckpointStore, MemoryStore};
use std::sync::Arc;
use support::llm_server::{Reply, Script, ScriptedLlm};

/// The store's inline limit (`src/store/dynamodb/body.rs`): a body over it is split.
const INLINE_LIMIT: usize = 350 * 1024;

/// Twelve documents of one 250-word passage each, every one sharing the question's words.
fn long_documents(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..12 {
        let words: Vec<String> = (0..248)
            .map(|w| format!("canker{} bark{} orchard", i * 1000 + w, w % 7))
            .collect();
        let text = format!("# Canker note {i}\n\nPatch canker bark {}", words.join(" "));
        std::fs::write(dir.join(format!("note-{i:02}.md")), text).unwrap();
    }
}

/// A long answer the floor lets through: distinct words, every one from the documents, most
/// of its sentences supported by the passages retrieved.
fn long_answer() -> String {
    // Twenty words of each of ten notes' first passages, a sentence each: most are among
    // the passages retrieved.
    let sentences: Vec<String> = (0..10)
        .map(|s| {
            let words: Vec<String> = (0..20).map(|w| format!("canker{}", s * 1000 + w)).collect();
            format!("Canker{} {}.", s * 20 + 100_000, words.join(" "))
        })
        .collect();
    format!("Patch canker marks the bark: {}", sentences.join(" "))
}

#[tokio::test]
async fn the_largest_run_keeps_its_checkpoint_well_inside_the_item_limit() {
    let work = tempfile::tempdir().unwrap();
    long_documents(&work.path().join("src"));
    let out = work.path().join("kb");
    ingest(&work.path().join("src"), &out, &IngestOptions::default())
        .await
        .unwrap();
    let kb = bounded_rag::ingest::load_kb(&out).unwrap();

    let script = Script::defaults()
        .on(
            "grade_hallucinations",
            [Reply::no(), Reply::no(), Reply::yes()],
        )
        .on("grade_answer", [Reply::no()])
        .on(
            "refine_query",
            // A word of a later passage of three notes: each rewrite retrieves other passages,
            // and the notes' first passages still.
            [
                "canker3200 patch canker bark",
                "canker7200 patch canker bark",
                "canker11200 patch canker bark",
            ]
            .map(Reply::refined),
        )
        .on("generate_answer", [Reply::answer(&long_answer())]);
    let llm = ScriptedLlm::start(script).await;
    let model = OpenAiModel::new(OpenAiConfig::new(llm.base_url(), "test-model")).unwrap();
    let graph = RagGraph::new(Arc::new(model), Arc::new(kb), None, RagLimits::default());
    let store = MemoryStore::new();
    let workflow = Workflow::new(&graph, &store, &SystemClock);
    let mut request = RunRequest::new("What does patch canker do to the bark?");
    request.n_retrieved_documents = 10;
    let budget = Budget::new(50, SystemClock.now_ms() + 120_000);
    let run = workflow.run_new("big", request, &budget).await.unwrap();

    assert_eq!(
        run.status,
        RunStatus::BestEffort,
        "{:?}",
        run.metadata.limits_hit
    );
    let generated: Vec<&serde_json::Value> = (run.workflow_steps.iter())
        .filter(|s| s.name == "generate")
        .map(|s| &s.details)
        .collect();
    assert_eq!(run.metadata.limits_hit, ["max_retries"], "{generated:?}");
    assert_eq!(run.metadata.hallucination_retry_count, 2);
    assert_eq!(run.metadata.query_transformation_retry_count, 3);
    let retrievals = run
        .workflow_steps
        .iter()
        .filter(|s| s.name == "kg_retrieval")
        .count();
    assert_eq!(retrievals, 4, "the first search and three rewrites");
    for step in run
        .workflow_steps
        .iter()
        .filter(|s| s.name == "kg_retrieval")
    {
        assert_eq!(step.details["sources"].as_array().unwrap().len(), 10);
    }
    let body = store.get("run#big").await.unwrap().unwrap().body;
    let cp: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let trail = serde_json::to_vec(&cp["trail"]).unwrap().len();
    eprintln!(
        "worst-case run: {} steps, checkpoint {} bytes (trail {} bytes)",
        run.metadata.total_steps,
        body.len(),
        trail
    );
    assert!(body.len() < INLINE_LIMIT / 2, "{} bytes", body.len());
    // Every step but the last can still be forked from: its state rebuilds from the trail.
    let stored: RagCheckpoint = serde_json::from_slice(&body).unwrap();
    let last = run.metadata.total_steps;
    for step in 0..last {
        let rewound = stored
            .rewind(step)
            .unwrap_or_else(|e| panic!("step {step}: {e}"));
        assert_eq!(rewound.records.len(), step as usize);
    }
    assert_eq!(stored.rewind(last), Err(RewindError::AtEnd { step: last }));
}
