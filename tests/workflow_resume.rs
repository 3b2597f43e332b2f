//! Deadlines, interruption and resume, and racing invocations: checkpoints make a run continue
//! where it stopped, with its counters, and never let two invocations advance it.

use crate::support;

use bounded_rag::clock::{Clock, FakeClock, SystemClock};
use bounded_rag::engine::{Budget, EngineError};
use bounded_rag::llm::{OpenAiConfig, OpenAiModel};
use bounded_rag::rag::{LimitHit, RagGraph, RagLimits, RunRequest, RunStatus};
use bounded_rag::retry::RetryPolicy;
use bounded_rag::runs::Workflow;
use bounded_rag::store::{MemoryStore, StoreError};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use support::app::Timed;
use support::happy_path::{CANKER_REWRITES, QUESTION};
use support::llm_server::{Reply, Script, ScriptedLlm};
use support::tap::Tap;

const SCHEMAS: [&str; 6] = [
    "route_query",
    "grade_documents",
    "generate_answer",
    "grade_hallucinations",
    "grade_answer",
    "refine_query",
];

/// A graph whose every model call costs 200 ms on `clock`.
fn timed_graph(llm: &ScriptedLlm, clock: &Arc<FakeClock>) -> RagGraph {
    let model = Timed {
        inner: OpenAiModel::new(OpenAiConfig::new(llm.base_url(), "m")).unwrap(),
        clock: clock.clone(),
        per_call: Duration::from_millis(200),
    };
    let kb = bounded_rag::ingest::sample_kb().unwrap();
    RagGraph::new(Arc::new(model), Arc::new(kb), None, RagLimits::default())
}

async fn graph(llm: &ScriptedLlm) -> RagGraph {
    let model = OpenAiModel::new(OpenAiConfig::new(llm.base_url(), "test-model")).unwrap();
    let kb = bounded_rag::ingest::sample_kb().unwrap();
    RagGraph::new(Arc::new(model), Arc::new(kb), None, RagLimits::default()).with_remote_policy(
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        },
    )
}

fn never_useful() -> Script {
    Script::defaults()
        .on("grade_answer", [Reply::no()])
        .on("refine_query", CANKER_REWRITES.map(Reply::refined))
}

fn counts(llm: &ScriptedLlm) -> BTreeMap<&'static str, usize> {
    SCHEMAS.iter().map(|s| (*s, llm.calls(s))).collect()
}

#[tokio::test]
async fn interrupted_run_resumes_without_rerunning_completed_steps_and_keeps_counters() {
    // Reference: the same run, uninterrupted.
    let reference = ScriptedLlm::start(never_useful()).await;
    let g = graph(&reference).await;
    let store = MemoryStore::new();
    let wf = Workflow::new(&g, &store, &SystemClock);
    let budget = Budget::new(50, SystemClock.now_ms() + 60_000);
    let full = wf
        .run_new("reference", RunRequest::new(QUESTION), &budget)
        .await
        .unwrap();
    assert_eq!(full.metadata.query_transformation_retry_count, 3);

    // Put 1 creates the run, put k+1 saves step k: dying on put 10 loses step 9
    // (grade_documents of the second cycle) after its three model calls.
    let llm = ScriptedLlm::start(never_useful()).await;
    let g = graph(&llm).await;
    let store = Tap::new(MemoryStore::new()).dies_on(10);
    let clock = FakeClock::at_ms(SystemClock.now_ms());
    let wf = Workflow::new(&g, &store, &clock);
    let budget = Budget::new(50, clock.now_ms() + 60_000);
    let err = wf
        .run_new("run-1", RunRequest::new(QUESTION), &budget)
        .await
        .unwrap_err();
    assert!(
        matches!(err, EngineError::Store(StoreError::Transient(_))),
        "{err}"
    );

    let stored = wf.status("run-1").await.unwrap();
    assert_eq!(stored.status, RunStatus::Running);
    assert_eq!(stored.metadata.total_steps, 8);
    assert_eq!(stored.metadata.query_transformation_retry_count, 1);

    // While the dead invocation's lease is live nobody else may take the run.
    let busy = wf.resume("run-1", &budget).await.unwrap_err();
    assert!(matches!(busy, EngineError::Busy { .. }), "{busy}");

    // Once it lapses, a new invocation resumes from step 9.
    clock.advance(Duration::from_secs(3_600));
    let budget = Budget::new(50, clock.now_ms() + 60_000);
    let resumed = wf.resume("run-1", &budget).await.unwrap();
    assert_eq!(resumed.status, RunStatus::BestEffort);
    assert_eq!(resumed.metadata.total_steps, full.metadata.total_steps);
    assert_eq!(resumed.metadata.query_transformation_retry_count, 3);
    assert_eq!(
        resumed
            .workflow_steps
            .iter()
            .map(|s| &s.name)
            .collect::<Vec<_>>(),
        full.workflow_steps
            .iter()
            .map(|s| &s.name)
            .collect::<Vec<_>>()
    );

    let mut expected = counts(&reference);
    *expected.get_mut("grade_documents").unwrap() += 3; // only the unsaved step ran twice
    assert_eq!(counts(&llm), expected);
}

#[tokio::test]
async fn deadline_stops_the_run_before_it_passes_and_a_resume_finishes_it() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let clock = Arc::new(FakeClock::at_ms(1_000_000));
    let g = timed_graph(&llm, &clock);
    let store = MemoryStore::new();
    let wf = Workflow::new(&g, &store, clock.as_ref());
    // route 200 ms, retrieval 0, grading 3 x 200 ms: at 800 ms the longest step so far (600 ms)
    // no longer fits in the 200 ms left, so generation is not started.
    let deadline_ms = clock.now_ms() + 1_000;
    let budget = Budget::new(50, deadline_ms);
    let r = wf
        .run_new("late", RunRequest::new(QUESTION), &budget)
        .await
        .unwrap();
    assert_eq!(r.status, RunStatus::BestEffort);
    assert!(r.success);
    assert_eq!(r.metadata.limits_hit, ["deadline"]);
    assert_eq!(r.metadata.total_steps, 3);
    assert!(clock.now_ms() <= deadline_ms, "never ran past the deadline");
    assert!(r.answer.contains("ran out of time"), "{}", r.answer);
    assert!(
        r.answer.contains("Phytophthora"),
        "extractive best answer so far: {}",
        r.answer
    );
    assert_eq!(llm.calls("generate_answer"), 0);
    assert_eq!(
        (r.metadata.model_calls, r.metadata.tokens.total),
        (4, 4 * 110)
    );

    // A deadline stop is resumable: a fresh budget completes it without redoing steps.
    let budget = Budget::new(50, clock.now_ms() + 60_000);
    let done = wf.resume("late", &budget).await.unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.metadata.total_steps, 6);
    assert!(done.metadata.limits_hit.contains(&LimitHit::Deadline));
    assert_eq!(llm.calls("route_query"), 1);
    assert_eq!(llm.calls("grade_documents"), 3);
    assert_eq!(llm.total_calls(), 7);
    // Token and call counters are checkpointed: the resumed run counts the first invocation's.
    assert_eq!(
        (done.metadata.model_calls, done.metadata.tokens.total),
        (7, 7 * 110)
    );
}

#[tokio::test]
async fn the_token_budget_counts_the_tokens_of_earlier_invocations() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let clock = Arc::new(FakeClock::at_ms(1_000_000));
    let g = timed_graph(&llm, &clock);
    let store = MemoryStore::new();
    let wf = Workflow::new(&g, &store, clock.as_ref());
    // First invocation: stopped by the deadline after route + grading (4 calls, 440 tokens).
    let mut request = RunRequest::new(QUESTION);
    request.max_tokens = Some(1000);
    let budget = Budget::new(50, clock.now_ms() + 1_000);
    let r = wf.run_new("tokens", request, &budget).await.unwrap();
    assert_eq!(r.metadata.limits_hit, ["deadline"]);
    assert_eq!(r.metadata.tokens.total, 440);
    // Second invocation: 560 tokens left. generate's estimate from its prompt (three
    // documents and room for the answer: 720 here) fits a fresh budget of 1000 but not what is
    // left of this run's, so the run ends before asking for an answer.
    let budget = Budget::new(50, clock.now_ms() + 60_000);
    let done = wf.resume("tokens", &budget).await.unwrap();
    assert_eq!(done.status, RunStatus::BestEffort);
    assert_eq!(done.metadata.limits_hit, ["deadline", "token_budget"]);
    assert_eq!(done.metadata.tokens.total, 440);
    assert_eq!(llm.total_calls(), 4);
    assert_eq!(llm.calls("generate_answer"), 0);
    assert!(done.answer.contains("token budget"), "{}", done.answer);
}

#[tokio::test]
async fn two_invocations_racing_on_one_run_exactly_one_advances_it() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let g = graph(&llm).await;
    let store = MemoryStore::new();
    let wf = Workflow::new(&g, &store, &SystemClock);
    wf.submit("raced", RunRequest::new(QUESTION)).await.unwrap();
    let budget = Budget::new(50, SystemClock.now_ms() + 60_000);
    let (a, b) = tokio::join!(wf.resume("raced", &budget), wf.resume("raced", &budget));
    let (ok, err): (Vec<_>, Vec<_>) = [a, b].into_iter().partition(Result::is_ok);
    assert_eq!(ok.len(), 1, "exactly one invocation advanced the run");
    let err = err.into_iter().next().unwrap().unwrap_err();
    assert!(
        matches!(err, EngineError::Busy { .. } | EngineError::Lost { .. }),
        "{err}"
    );
    assert_eq!(llm.total_calls(), 7, "one run's worth of model calls");
    assert_eq!(
        wf.status("raced").await.unwrap().status,
        RunStatus::Completed
    );
}
