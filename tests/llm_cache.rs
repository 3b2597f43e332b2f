//! The response cache end to end: the whole workflow, with the app built by `App::build` from
//! settings exactly as the binaries build it (local file store in a temporary `STATE_DIR`),
//! against a scripted OpenAI-compatible server on loopback.

use crate::support;

use crate::support::happy_path::QUESTION;
use bounded_rag::config::Settings;
use bounded_rag::entry::App;
use bounded_rag::rag::{RunRequest, RunResponse, RunStatus};
use std::collections::HashMap;
use std::path::Path;
use support::llm_server::{Script, ScriptedLlm};

/// An app on `llm` with its state (checkpoints and cached replies) in `state_dir`.
async fn app(llm: &ScriptedLlm, state_dir: &Path, model: &str, cache_ttl: &str) -> App {
    let vars = HashMap::from([
        ("LLM_BASE_URL", llm.base_url()),
        ("LLM_MODEL", model.to_owned()),
        ("STATE_DIR", state_dir.display().to_string()),
        ("LLM_CACHE_TTL_SECONDS", cache_ttl.to_owned()),
        // The sequential path's exact calls and cache hits.
        ("SPECULATION", "off".to_owned()),
    ]);
    let settings = Settings::from_lookup(|name| vars.get(name).cloned()).expect("settings");
    App::build(settings).await.expect("app")
}

async fn run(app: &App) -> RunResponse {
    let run_id = uuid::Uuid::new_v4().to_string();
    app.workflow()
        .run_new(&run_id, RunRequest::new(QUESTION), &app.budget(None))
        .await
        .expect("run")
}

fn steps(r: &RunResponse) -> Vec<&str> {
    r.workflow_steps.iter().map(|s| s.name.as_str()).collect()
}

#[tokio::test]
async fn a_repeated_run_is_answered_from_the_cache_without_a_model_request() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let state = tempfile::tempdir().unwrap();
    let app = app(&llm, state.path(), "test-model", "3600").await;

    let first = run(&app).await;
    let requests = llm.total_calls();
    assert_eq!(first.status, RunStatus::Completed);
    assert_eq!(requests, 7, "route, 3 document grades, generate, 2 grades");
    assert_eq!(first.metadata.model_calls as usize, requests);
    assert_eq!(first.metadata.cache_hits, 0);

    let second = run(&app).await;
    assert_eq!(llm.total_calls(), requests, "no request in the second run");
    assert_eq!(second.metadata.cache_hits as usize, requests);
    assert_eq!(second.metadata.model_calls, 0);
    assert_eq!(second.metadata.tokens.total, 0);
    assert_eq!(second.status, RunStatus::Completed);
    assert_eq!(second.answer, first.answer);
    assert_eq!(second.answer, "Scripted answer [1].");
    assert_eq!(steps(&second), steps(&first));
    assert_eq!(second.citations, first.citations);
}

#[tokio::test]
async fn without_a_cache_ttl_every_run_calls_the_model() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let state = tempfile::tempdir().unwrap();
    let app = app(&llm, state.path(), "test-model", "0").await;

    let first = run(&app).await;
    let requests = llm.total_calls();
    let second = run(&app).await;
    assert_eq!(llm.total_calls(), 2 * requests);
    assert_eq!(second.metadata.model_calls as usize, requests);
    assert_eq!(second.metadata.cache_hits, 0);
    assert_eq!(second.answer, first.answer);
}

#[tokio::test]
async fn another_model_on_the_same_store_does_not_share_replies() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let state = tempfile::tempdir().unwrap();
    run(&app(&llm, state.path(), "model-a", "3600").await).await;
    let requests = llm.total_calls();

    let other = run(&app(&llm, state.path(), "model-b", "3600").await).await;
    assert_eq!(llm.total_calls(), 2 * requests);
    assert_eq!(other.metadata.cache_hits, 0);
    let again = run(&app(&llm, state.path(), "model-a", "3600").await).await;
    assert_eq!(llm.total_calls(), 2 * requests);
    assert_eq!(again.metadata.cache_hits as usize, requests);
}
