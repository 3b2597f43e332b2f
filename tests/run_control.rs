//! Control over runs, black-box through `cargo lambda watch` (the `api` and `worker` binaries)
//! against moto (DynamoDB, SQS) and the scripted OpenAI-compatible server: cancelling a run in
//! the middle of a held model call and a suspended run, and the history routes.
//!
//! Needs `scripts/setup-test-tools.sh` (moto_server and cargo-lambda in `.local/venv`).

use crate::support;

use crate::support::happy_path::QUESTION;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::lambda_watch::LambdaWatch;
use support::llm_server::{Reply, Script, ScriptedLlm};
use support::moto::{moto, receive, Moto};
use support::scripted_http::Hold;

/// The functions' environment: moto, a fresh table and queue, the scripted model.
async fn env(moto: &Moto, llm: &ScriptedLlm) -> (Vec<(&'static str, String)>, String) {
    let table = moto.create_table().await;
    let queue_url = moto.create_queue().await;
    let mut env = moto.function_env();
    env.extend([
        ("CHECKPOINT_TABLE", table),
        ("WORK_QUEUE_URL", queue_url.clone()),
        ("LLM_PROVIDER", "openai".to_owned()),
        ("LLM_BASE_URL", llm.base_url()),
        ("LLM_MODEL", "scripted-model".to_owned()),
        ("LLM_API_KEY", "sk-test".to_owned()),
        ("RUST_LOG", "bounded_rag=debug,warn".to_owned()),
        // These tests pin the sequential path's steps and calls (speculation is tested on
        // its own, in src/rag/speculation_tests.rs).
        ("SPECULATION", "off".to_owned()),
    ]);
    (env, queue_url)
}

/// The one message on the queue, as the worker's SQS event.
async fn next_batch(moto: &Moto, queue_url: &str) -> Value {
    let messages = receive(&moto.sqs().await, queue_url, 10).await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    serde_json::to_value(support::moto::sqs_event(&messages)).expect("SQS event JSON")
}

async fn post(watch: &LambdaWatch, path: &str, body: Option<&Value>) -> (u16, Value) {
    let body = body.map(Value::to_string);
    let answer = watch
        .url_request(
            "api",
            "POST",
            path,
            body.as_deref(),
            &[("content-type", "application/json")],
        )
        .await;
    (answer.status, answer.json())
}

async fn get(watch: &LambdaWatch, path: &str) -> (u16, Value) {
    let answer = watch.url_request("api", "GET", path, None, &[]).await;
    (answer.status, answer.json())
}

/// Waits until the model has received `n` calls named `name` (bounded).
async fn arrived(llm: &ScriptedLlm, name: &str, n: usize) {
    let until = Instant::now() + Duration::from_secs(60);
    while llm.calls(name) < n {
        assert!(
            Instant::now() < until,
            "{name} never arrived: {:?}",
            llm.sequence()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_cancel_during_a_held_model_call_stops_the_run_with_no_call_after_it() {
    let moto = moto().await;
    let hold = Hold::new();
    let llm = ScriptedLlm::start(
        Script::defaults().on("grade_hallucinations", [Reply::yes().held(&hold)]),
    )
    .await;
    let (env, queue_url) = env(moto, &llm).await;
    let watch = LambdaWatch::start(&env).await;

    let (status, started) = post(
        &watch,
        "/workflow/runs",
        Some(&json!({"question": QUESTION})),
    )
    .await;
    assert_eq!(status, 202, "{started}");
    let run_id = started["run_id"].as_str().expect("run_id").to_owned();
    let batch = next_batch(moto, &queue_url).await;
    let worker = async { watch.invoke("worker", &batch).await };
    let control = async {
        // The worker is inside grade_hallucinations, its model call held.
        arrived(&llm, "grade_hallucinations", 1).await;
        let before = llm.sequence();
        let (status, cancelled) =
            post(&watch, &format!("/workflow/runs/{run_id}/cancel"), None).await;
        assert_eq!(status, 200, "{cancelled}");
        assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
        assert_eq!(cancelled["success"], false, "{cancelled}");
        // The latest generated answer is the best answer so far.
        assert_eq!(cancelled["answer"], "Scripted answer [1].", "{cancelled}");
        // A repeated cancel changes nothing.
        let (status, again) = post(&watch, &format!("/workflow/runs/{run_id}/cancel"), None).await;
        assert_eq!(
            (status, &again["status"]),
            (200, &json!("cancelled")),
            "{again}"
        );
        hold.release();
        (before, Instant::now())
    };
    let (outcome, (before, released)) = tokio::join!(worker, control);
    // How soon a run in a long model call stops once the call returns: one failed checkpoint
    // write and one read (printed for README's figure; no wall-clock assertion).
    eprintln!(
        "cancel: the worker stopped {:?} after the held call returned",
        released.elapsed()
    );
    assert_eq!(outcome, json!({"batchItemFailures": []}), "{outcome:#}");

    // No model call started after the cancel: the held call was the last.
    assert_eq!(llm.sequence(), before, "calls after the cancel");
    assert_eq!(llm.calls("grade_hallucinations"), 1);
    assert_eq!(llm.calls("generate_answer"), 1);
    let (status, run) = get(&watch, &format!("/workflow/runs/{run_id}")).await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "cancelled", "{run}");
    // The step in flight when the cancel landed was not recorded: route, retrieval,
    // grading and generation were.
    let steps: Vec<&str> = run["workflow_steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        steps,
        [
            "route_question",
            "kg_retrieval",
            "grade_documents",
            "generate"
        ],
        "{run:#}"
    );
    // Cancelling a cancelled run stays idempotent; nothing is queued, nothing logged as failed.
    assert!(receive(&moto.sqs().await, &queue_url, 10).await.is_empty());
    let logs = watch.logs();
    assert!(
        logs.contains("run was cancelled; this invocation stopped"),
        "{logs}"
    );
    for failure in [
        "node failed",
        "poison message",
        "record will be redelivered",
    ] {
        assert!(!logs.contains(failure), "{failure} logged:\n{logs}");
    }
}

#[tokio::test]
async fn a_cancelled_suspended_run_never_resumes_and_a_finished_run_cannot_be_cancelled() {
    let moto = moto().await;
    // Each structured call takes 700 ms: a 1 s budget covers the first step only, so the run
    // is suspended with a continuation queued.
    let slow = Duration::from_millis(700);
    let llm = ScriptedLlm::start(
        Script::defaults().on("route_query", [Reply::route("kg_retrieval").delayed(slow)]),
    )
    .await;
    let (mut env, queue_url) = env(moto, &llm).await;
    env.push(("RUN_TIMEOUT_MS", "1000".to_owned()));
    let watch = LambdaWatch::start(&env).await;

    let (status, suspended) = post(
        &watch,
        "/workflow/run",
        Some(&json!({"question": QUESTION})),
    )
    .await;
    assert_eq!(status, 202, "{suspended}");
    assert_eq!(suspended["status"], "suspended", "{suspended}");
    let run_id = suspended["run_id"].as_str().expect("run_id").to_owned();
    let calls = llm.total_calls();
    assert_eq!(calls, 1, "{:?}", llm.sequence());

    let (status, cancelled) = post(&watch, &format!("/workflow/runs/{run_id}/cancel"), None).await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["metadata"]["total_steps"], 1, "{cancelled}");

    // The continuation that was queued is delivered: the worker advances nothing.
    let batch = next_batch(moto, &queue_url).await;
    let outcome = watch.invoke("worker", &batch).await;
    assert_eq!(outcome, json!({"batchItemFailures": []}), "{outcome:#}");
    assert_eq!(llm.total_calls(), calls, "{:?}", llm.sequence());
    let (_, run) = get(&watch, &format!("/workflow/runs/{run_id}")).await;
    assert_eq!(run["status"], "cancelled", "{run}");
    assert_eq!(run["metadata"]["total_steps"], 1, "{run}");

    // A run that ended cannot be cancelled; another caller's run is not found.
    let (status, done) = post(
        &watch,
        "/workflow/run",
        Some(&json!({"question": QUESTION, "mode": "speed"})),
    )
    .await;
    let done_id = done["run_id"].as_str().expect("run_id").to_owned();
    assert_eq!(status, 202, "{done}");
    let batch = next_batch(moto, &queue_url).await;
    watch.invoke("worker", &batch).await;
    let (status, finished) = get(&watch, &format!("/workflow/runs/{done_id}")).await;
    assert_eq!(
        (status, &finished["status"]),
        (200, &json!("completed")),
        "{finished}"
    );
    let (status, refused) = post(&watch, &format!("/workflow/runs/{done_id}/cancel"), None).await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"], "run_finished", "{refused}");
    assert_eq!(refused["status"], "completed", "{refused}");
    let (status, missing) = post(&watch, "/workflow/runs/no-such-run/cancel", None).await;
    assert_eq!(status, 404, "{missing}");

    // History through the table's owner index: newest first, paged, filtered by status.
    let ids = |list: &Value| -> Vec<String> {
        list["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .map(|r| r["run_id"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let (status, all) = get(&watch, "/workflow/runs").await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(ids(&all), [done_id.clone(), run_id.clone()], "{all:#}");
    assert_eq!(all["runs"][0]["status"], "completed", "{all:#}");
    assert_eq!(all["runs"][1]["status"], "cancelled", "{all:#}");
    let (_, first) = get(&watch, "/workflow/runs?limit=1").await;
    assert_eq!(ids(&first), [done_id.as_str()], "{first:#}");
    let cursor = first["next_cursor"].as_str().expect("a next page");
    let (_, second) = get(&watch, &format!("/workflow/runs?limit=1&cursor={cursor}")).await;
    assert_eq!(ids(&second), [run_id.as_str()], "{second:#}");
    let (_, cancelled) = get(&watch, "/workflow/runs?status=cancelled").await;
    assert_eq!(ids(&cancelled), [run_id.as_str()], "{cancelled:#}");
    assert_eq!(cancelled["next_cursor"], Value::Null, "{cancelled:#}");
    let (status, steps) = get(&watch, &format!("/workflow/runs/{done_id}/steps?limit=2")).await;
    assert_eq!(status, 200, "{steps}");
    let indexes: Vec<u64> = steps["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["index"].as_u64().unwrap())
        .collect();
    assert_eq!(
        (indexes, &steps["next_after"]),
        (vec![1, 2], &json!(2)),
        "{steps:#}"
    );
    assert_eq!(steps["steps"][0]["name"], "route_question", "{steps:#}");
    assert_eq!(steps["steps"][0]["model_calls"], 1, "{steps:#}");
    let (_, rest) = get(&watch, &format!("/workflow/runs/{done_id}/steps?after=2")).await;
    let total = finished["metadata"]["total_steps"].as_u64().unwrap();
    assert_eq!(
        rest["steps"].as_array().unwrap().len() as u64,
        total - 2,
        "{rest:#}"
    );
    assert_eq!(rest["next_after"], Value::Null, "{rest:#}");
}
