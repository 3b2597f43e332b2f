//! Forking a run from one of its steps (`POST /workflow/runs/{run_id}/fork`), through the HTTP
//! handler with real API Gateway events, over the scripted OpenAI-compatible server: the steps
//! up to the fork are not run again and cost no model call (counted per schema), the original
//! run is untouched, and every request that cannot be forked is refused naming why.

use crate::support;

use crate::support::happy_path::STEPS;
use bounded_rag::entry::{api, App};
use bounded_rag::runs::{MemoryQueue, WorkQueue};
use bounded_rag::store::{CheckpointStore, MemoryStore};
use serde_json::{json, Value};
use std::sync::Arc;
use support::app::app;
use support::llm_server::{Script, ScriptedLlm};

const RUN: &str = include_str!("../events/apigw-run.json");
const RUNS_START: &str = include_str!("../events/apigw-runs-start.json");
const RUNS_GET: &str = include_str!("../events/apigw-runs-get.json");
const RUNS_GET_JWT: &str = include_str!("../events/apigw-runs-get-jwt.json");

/// The model calls of a run of the default script: route 1, grade_documents 3 (one per
/// passage), generate 1, grade_hallucinations 1, grade_answer 1.
const RUN_CALLS: usize = 7;

/// `POST /workflow/runs/{run_id}/fork` with `body`, by the caller of `like` (an event of the
/// IAM caller, or the JWT caller).
pub(crate) fn fork_event(like: &str, run_id: &str, body: &Value) -> String {
    let mut v: Value = serde_json::from_str(like).unwrap();
    let path = format!("/workflow/runs/{run_id}/fork");
    v["rawPath"] = path.clone().into();
    v["rawQueryString"] = "".into();
    v["routeKey"] = "POST /workflow/runs/{run_id}/fork".into();
    v["requestContext"]["http"]["method"] = "POST".into();
    v["requestContext"]["http"]["path"] = path.into();
    let body = body.to_string();
    v["headers"]["content-length"] = body.len().to_string().into();
    v["body"] = body.into();
    v.to_string()
}

fn get_event(run_id: &str) -> String {
    RUNS_GET.replace("00000000-0000-4000-8000-000000000001", run_id)
}

async fn call(app: &App, queue: Option<&dyn WorkQueue>, event: &str) -> (u16, Value) {
    let request = lambda_http::request::from_str(event).expect("event parses");
    let response = api::handle(app, queue, request).await;
    (response.status().as_u16(), api::body_json(&response))
}

fn names(run: &Value) -> Vec<String> {
    run["workflow_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A completed run of the default script, the server's first: its body.
async fn completed(app: &App, llm: &ScriptedLlm) -> Value {
    completed_nth(app, llm, 1).await
}

/// The `nth` completed run of the default script on the server: its body, after exactly the
/// calls of `nth` runs in all.
async fn completed_nth(app: &App, llm: &ScriptedLlm, nth: usize) -> Value {
    let (status, run) = call(app, None, RUN).await;
    assert_eq!(
        (status, run["status"].as_str()),
        (200, Some("completed")),
        "{run}"
    );
    assert_eq!(llm.total_calls(), nth * RUN_CALLS);
    run
}

#[tokio::test]
async fn a_fork_after_grading_runs_only_the_steps_after_it_and_leaves_the_original_as_it_was() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), false);
    let run = completed(&app, &llm).await;
    let run_id = run["run_id"].as_str().unwrap();
    assert_eq!(names(&run), STEPS);
    llm.script(
        "generate_answer",
        [support::llm_server::Reply::answer("Forked answer [1].")],
    );

    let (status, fork) = call(
        &app,
        None,
        &fork_event(RUN, run_id, &json!({"from_step": 3})),
    )
    .await;
    assert_eq!(status, 200, "{fork}");
    assert_eq!(fork["status"], "completed", "{fork}");
    assert_ne!(fork["run_id"], run["run_id"]);
    assert_eq!(
        fork["metadata"]["forked_from"],
        json!({"run_id": run_id, "step": 3})
    );
    assert_eq!(fork["answer"], "Forked answer [1].");
    // Exactly the calls of the three steps after grade_documents; nothing before it again.
    assert_eq!(llm.total_calls(), RUN_CALLS + 3);
    assert_eq!(llm.calls("route_query"), 1);
    assert_eq!(llm.calls("grade_documents"), 3);
    assert_eq!(
        (
            llm.calls("generate_answer"),
            llm.calls("grade_hallucinations"),
            llm.calls("grade_answer")
        ),
        (2, 2, 2)
    );
    // The fork carries the three steps it started from, as they were, then its own three.
    assert_eq!(names(&fork), names(&run));
    assert_eq!(
        fork["workflow_steps"].as_array().unwrap()[..3],
        run["workflow_steps"].as_array().unwrap()[..3]
    );
    assert_eq!(fork["metadata"]["total_steps"], 6);
    // The same passages (each with the sentences of its own answer).
    let urls = |r: &serde_json::Value| -> Vec<String> {
        (r["citations"].as_array().unwrap().iter())
            .map(|c| c["url"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(urls(&fork), urls(&run));

    // The original is untouched; the fork is stored and read like any run.
    let (status, original) = call(&app, None, &get_event(run_id)).await;
    assert_eq!(status, 200);
    assert_eq!(original, run);
    let fork_id = fork["run_id"].as_str().unwrap();
    let (status, stored) = call(&app, None, &get_event(fork_id)).await;
    assert_eq!((status, &stored), (200, &fork));

    // A fork of the fork, after its generate step: two more calls (the two checks).
    let (status, again) = call(
        &app,
        None,
        &fork_event(RUN, fork_id, &json!({"from_step": 4})),
    )
    .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["metadata"]["forked_from"]["run_id"], fork_id);
    assert_eq!(again["answer"], "Forked answer [1].");
    assert_eq!(llm.total_calls(), RUN_CALLS + 3 + 2);
}

#[tokio::test]
async fn a_fork_with_a_new_question_searches_again_for_it() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), false);
    let run = completed(&app, &llm).await;
    let run_id = run["run_id"].as_str().unwrap();
    let question = "How do I control mealybugs on durian?";
    let body = json!({"from_step": 3, "question": question, "mode": "speed"});
    let (status, fork) = call(&app, None, &fork_event(RUN, run_id, &body)).await;
    assert_eq!(status, 200, "{fork}");
    assert_eq!(fork["question"], question);
    // After the route the run had chosen: retrieval again, then (speed: no checks) generate.
    assert_eq!(
        names(&fork)[3..],
        ["kg_retrieval".to_owned(), "generate".to_owned()]
    );
    assert_eq!(llm.calls("route_query"), 1);
    assert_eq!(llm.calls("grade_documents"), 3);
    assert_eq!(llm.total_calls(), RUN_CALLS + 1);
    let cited: Vec<&str> = fork["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["url"].as_str().unwrap())
        .collect();
    assert!(cited.iter().any(|u| u.contains("mealybugs")), "{cited:?}");
    assert_ne!(fork["citations"], run["citations"]);
}

/// Rewrites the stored checkpoint of `run_id` with `change`.
async fn alter(store: &MemoryStore, run_id: &str, change: impl FnOnce(&mut Value)) {
    let key = format!("run#{run_id}");
    let item = store.get(&key).await.unwrap().unwrap();
    let mut cp: Value = serde_json::from_slice(&item.body).unwrap();
    change(&mut cp);
    let body = serde_json::to_vec(&cp).unwrap();
    store
        .put(&key, item.version, &body, item.lease.as_ref())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_run_of_another_workflow_version_or_stored_before_forks_is_not_forkable() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let store = Arc::new(MemoryStore::new());
    let app = app(&llm, store.clone(), false);
    let run = completed(&app, &llm).await;
    let run_id = run["run_id"].as_str().unwrap();
    let body = json!({"from_step": 3});
    alter(&store, run_id, |cp| {
        cp["workflow_version"] = "0123456789abcdef".into()
    })
    .await;
    let (status, answer) = call(&app, None, &fork_event(RUN, run_id, &body)).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (409, Some("not_forkable")),
        "{answer}"
    );
    let message = answer["message"].as_str().unwrap();
    assert!(
        message.contains("0123456789abcdef") && message.contains("start a new run"),
        "{message}"
    );

    let run = completed_nth(&app, &llm, 2).await;
    let run_id = run["run_id"].as_str().unwrap();
    alter(&store, run_id, |cp| {
        cp.as_object_mut().unwrap().remove("trail");
    })
    .await;
    let (status, answer) = call(&app, None, &fork_event(RUN, run_id, &body)).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (409, Some("not_forkable")),
        "{answer}"
    );
    assert!(answer["message"]
        .as_str()
        .unwrap()
        .contains("before runs could be forked"));
    assert_eq!(
        llm.total_calls(),
        2 * RUN_CALLS,
        "no refused fork made a call"
    );
}

#[tokio::test]
async fn what_cannot_be_forked_is_refused_naming_why() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(&llm, Arc::new(MemoryStore::new()), true);
    let run = completed(&app, &llm).await;
    let run_id = run["run_id"].as_str().unwrap();
    let refused = |body: Value| {
        let app = &app;
        async move { call(app, None, &fork_event(RUN, run_id, &body)).await }
    };
    // The last step: nothing after it. Past the end. A malformed body.
    for (body, field) in [
        (json!({"from_step": 6}), "from_step"),
        (json!({"from_step": 60}), "from_step"),
        (json!({}), "from_step"),
        (json!({"from_step": 1, "mode": "fast"}), "mode"),
        (json!({"from_step": 1, "question": ""}), "question"),
    ] {
        let (status, answer) = refused(body.clone()).await;
        assert_eq!(
            (status, answer["field"].as_str()),
            (400, Some(field)),
            "{body}: {answer}"
        );
    }
    let (_, past) = refused(json!({"from_step": 60})).await;
    assert!(
        past["message"]
            .as_str()
            .unwrap()
            .contains("it has 6 step(s)"),
        "{past}"
    );
    // Another caller's run does not exist for them.
    let (status, _) = call(
        &app,
        None,
        &fork_event(RUNS_GET_JWT, run_id, &json!({"from_step": 1})),
    )
    .await;
    assert_eq!(status, 404);
    // A run still queued may still take steps.
    let queue = MemoryQueue::default();
    let (status, queued) = call(&app, Some(&queue), RUNS_START).await;
    assert_eq!(status, 202, "{queued}");
    let queued_id = queued["run_id"].as_str().unwrap();
    let (status, answer) = call(
        &app,
        None,
        &fork_event(RUN, queued_id, &json!({"from_step": 0})),
    )
    .await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (409, Some("run_not_ended")),
        "{answer}"
    );
    // GET on the fork route says to POST.
    let mut get: Value = serde_json::from_str(&fork_event(RUN, run_id, &json!({}))).unwrap();
    get["requestContext"]["http"]["method"] = "GET".into();
    let (status, _) = call(&app, None, &get.to_string()).await;
    assert_eq!(status, 405);
    // Nothing refused made a model call.
    assert_eq!(llm.total_calls(), RUN_CALLS);
}
