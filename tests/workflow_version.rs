//! Runs that outlive a deploy: a checkpoint records the workflow version that wrote it, and a
//! continuation reaching code of another version resumes only when that code declares the
//! older version compatible; otherwise the run ends `failed`, without running a node, with a
//! hint naming both versions.

use crate::support;

use crate::support::happy_path::QUESTION;
use bounded_rag::clock::{Clock, FakeClock};
use bounded_rag::engine::{run_key, Budget, Shape, WorkflowVersion};
use bounded_rag::llm::{OpenAiConfig, OpenAiModel};
use bounded_rag::rag::{RagGraph, RagLimits, RunRequest, RunStatus};
use bounded_rag::runs::Workflow;
use bounded_rag::store::{CheckpointStore, MemoryStore};
use std::sync::Arc;
use std::time::Duration;
use support::app::Timed;
use support::llm_server::{Script, ScriptedLlm};

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

/// The version of a changed graph: `generate` may also go back to `web_search`.
fn changed_graph_version() -> WorkflowVersion {
    Shape {
        nodes: &[
            "route_question",
            "kg_retrieval",
            "grade_documents",
            "transform_query",
            "web_search",
            "generate",
            "grade_hallucinations",
            "grade_answer",
        ],
        edges: &[
            ("start", "route_question"),
            ("route_question", "kg_retrieval"),
            ("kg_retrieval", "grade_documents"),
            ("grade_documents", "generate"),
            ("generate", "web_search"),
            ("web_search", "generate"),
            ("generate", "end"),
        ],
        state_format: 1,
    }
    .version()
}

/// Stops a run by its deadline after three steps (route, retrieval, grading; `generate` is
/// next), then rewrites its checkpoint as `version` would have written it (`None`: as code
/// older than workflow versions did).
async fn suspended_by(
    wf: &Workflow<'_>,
    store: &MemoryStore,
    clock: &FakeClock,
    run_id: &str,
    current: &WorkflowVersion,
    version: Option<&WorkflowVersion>,
) {
    let budget = Budget::new(50, clock.now_ms() + 1_000);
    let r = wf
        .run_new(run_id, RunRequest::new(QUESTION), &budget)
        .await
        .unwrap();
    assert_eq!(r.metadata.total_steps, 3);
    assert_eq!(r.metadata.limits_hit, ["deadline"]);
    let key = run_key(run_id);
    let item = store.get(&key).await.unwrap().unwrap();
    let mut cp: serde_json::Value = serde_json::from_slice(&item.body).unwrap();
    assert_eq!(
        cp["workflow_version"],
        current.as_str(),
        "every checkpoint records its version"
    );
    match version {
        Some(v) => cp["workflow_version"] = v.as_str().into(),
        None => {
            cp.as_object_mut().unwrap().remove("workflow_version");
        }
    }
    let body = serde_json::to_vec(&cp).unwrap();
    store
        .put(&key, item.version, &body, item.lease.as_ref())
        .await
        .unwrap();
}

#[tokio::test]
async fn an_incompatible_version_fails_the_run_with_a_hint_and_runs_no_node() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let clock = Arc::new(FakeClock::at_ms(1_000_000));
    let g = timed_graph(&llm, &clock);
    let store = MemoryStore::new();
    let wf = Workflow::new(&g, &store, clock.as_ref());
    let old = changed_graph_version();
    assert_ne!(&old, g.workflow_version());
    suspended_by(&wf, &store, &clock, "old", g.workflow_version(), Some(&old)).await;
    assert_eq!(llm.total_calls(), 4);

    let budget = Budget::new(50, clock.now_ms() + 60_000);
    let r = wf.resume("old", &budget).await.unwrap();
    assert_eq!(r.status, RunStatus::Failed);
    assert!(!r.success);
    assert_eq!(r.metadata.total_steps, 3, "no node ran");
    assert_eq!(llm.total_calls(), 4, "no model call");
    let error = r.error.expect("a failed run says why");
    assert_eq!(error.node, "workflow_version");
    assert_eq!(error.class, bounded_rag::error::ErrorClass::Permanent);
    for text in [old.as_str(), g.workflow_version().as_str(), "re-submit"] {
        assert!(error.hint.contains(text), "{text} not in {}", error.hint);
    }
    // The failure is stored: status says the same, and another continuation changes nothing.
    assert_eq!(
        wf.status("old").await.unwrap().error.unwrap().hint,
        error.hint
    );
    let again = wf.resume("old", &budget).await.unwrap();
    assert_eq!(
        (again.status, again.metadata.total_steps),
        (RunStatus::Failed, 3)
    );
    assert_eq!(llm.total_calls(), 4);
}

#[tokio::test]
async fn a_version_declared_compatible_resumes_where_it_stopped() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let clock = Arc::new(FakeClock::at_ms(1_000_000));
    let old = changed_graph_version();
    let g = timed_graph(&llm, &clock).resuming_from(old.clone());
    let store = MemoryStore::new();
    let wf = Workflow::new(&g, &store, clock.as_ref());
    suspended_by(&wf, &store, &clock, "old", g.workflow_version(), Some(&old)).await;

    let budget = Budget::new(50, clock.now_ms() + 60_000);
    let r = wf.resume("old", &budget).await.unwrap();
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(r.metadata.total_steps, 6);
    assert_eq!(llm.calls("route_query"), 1, "resumed, not restarted");
    assert_eq!(llm.total_calls(), 7);
    // The checkpoint now records the version that wrote it last.
    let item = store.get(&run_key("old")).await.unwrap().unwrap();
    let cp: serde_json::Value = serde_json::from_slice(&item.body).unwrap();
    assert_eq!(cp["workflow_version"], g.workflow_version().as_str());
}

#[tokio::test]
async fn a_checkpoint_without_a_version_is_taken_as_the_first_versioned_graph() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let clock = Arc::new(FakeClock::at_ms(1_000_000));
    let g = timed_graph(&llm, &clock);
    let store = MemoryStore::new();
    let wf = Workflow::new(&g, &store, clock.as_ref());
    suspended_by(&wf, &store, &clock, "legacy", g.workflow_version(), None).await;
    let budget = Budget::new(50, clock.now_ms() + 60_000);
    let r = wf.resume("legacy", &budget).await.unwrap();
    assert_eq!(
        (r.status, r.metadata.total_steps),
        (RunStatus::Completed, 6)
    );
    assert_eq!(llm.total_calls(), 7);
}
