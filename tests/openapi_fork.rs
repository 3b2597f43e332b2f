//! The answers of `POST /workflow/runs/{run_id}/fork`, one per documented status, for the
//! contract test in `openapi.rs` (which checks each against `openapi.yaml` and that every
//! documented status occurred).

use crate::support;

use bounded_rag::runs::MemoryQueue;
use bounded_rag::store::{CheckpointStore, MemoryStore};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use support::app::{app, timed_app_on};
use support::llm_server::{Reply, Script, ScriptedLlm};
use support::openapi::{call, Exchange};

const RUN: &str = include_str!("../events/apigw-run.json");
const RUNS_START: &str = include_str!("../events/apigw-runs-start.json");

/// `POST /workflow/runs/{run_id}/fork` with the JSON `body`, by the IAM caller of `apigw-run.json`.
pub(crate) fn fork_event(run_id: &str, body: &str) -> String {
    let body: Value = serde_json::from_str(body).expect("a JSON body");
    crate::run_fork::fork_event(RUN, run_id, &body)
}

fn run_id_of(x: &Exchange) -> String {
    let body: Value = serde_json::from_slice(&x.body).unwrap();
    body["run_id"].as_str().unwrap().to_owned()
}

/// One answer of the fork route per documented status (and a few more), on a scripted model
/// of its own (a task of its own: the contract test's future is deep already).
pub(crate) async fn fork_answers() -> Vec<Exchange> {
    let llm = &ScriptedLlm::start(Script::defaults()).await;
    let mut answers = Vec::new();
    let queue = MemoryQueue::default();
    let store = Arc::new(MemoryStore::new());
    let main = app(llm, store.clone(), true);
    let done = call(&main, None, RUN).await;
    let run_id = run_id_of(&done);
    let step = |n: u32| json!({ "from_step": n }).to_string();

    // 200; 400 (a bad step, a bad body, a bad id); 404; 413.
    let forked = call(&main, None, &fork_event(&run_id, &step(3))).await;
    assert_eq!(forked.status, 200, "{forked:?}");
    answers.push(forked);
    answers.push(call(&main, None, &fork_event(&run_id, &step(6))).await);
    answers.push(call(&main, None, &fork_event(&run_id, r#"{"from_step":"x"}"#)).await);
    answers.push(call(&main, None, &fork_event("not.a.run", &step(1))).await);
    let unknown = "00000000-0000-4000-8000-00000000dead";
    answers.push(call(&main, None, &fork_event(unknown, &step(1))).await);
    let big = json!({ "from_step": 1, "question": "x".repeat(70_000) }).to_string();
    answers.push(call(&main, None, &fork_event(&run_id, &big)).await);

    // 409: a run still queued.
    let queued = call(&main, Some(&queue), RUNS_START).await;
    let refused = call(&main, None, &fork_event(&run_id_of(&queued), &step(0))).await;
    assert_eq!(refused.status, 409, "{refused:?}");
    answers.push(refused);

    // 202: a fork from the first step that runs out of budget, with a queue to continue it.
    let (timed, _clock) = timed_app_on(
        llm,
        Duration::from_millis(200),
        Duration::from_millis(700),
        store.clone(),
    );
    answers.push(call(&timed, Some(&queue), &fork_event(&run_id, &step(0))).await);

    // 429: the request rate, counted before anything else.
    let limited = app(llm, Arc::new(MemoryStore::new()), true)
        .with_max_requests_per_caller_per_minute(Some(1));
    answers.push(call(&limited, None, RUN).await);
    answers.push(call(&limited, None, &fork_event(&run_id, &step(1))).await);

    // 500: a checkpoint that cannot be read.
    let corrupt = "00000000-0000-4000-8000-0000000000cc";
    store
        .put(&format!("run#{corrupt}"), 0, b"{not a checkpoint", None)
        .await
        .unwrap();
    answers.push(call(&main, None, &fork_event(corrupt, &step(1))).await);

    // 502 and 503: forks of failed runs whose first step fails again, for good or not.
    for status in [400, 500] {
        let script = Script::defaults().on("route_query", [Reply::status(status)]);
        let failing = ScriptedLlm::start(script).await;
        let failing = app(&failing, Arc::new(MemoryStore::new()), false);
        let failed = run_id_of(&call(&failing, None, RUN).await);
        answers.push(call(&failing, None, &fork_event(&failed, &step(0))).await);
    }
    answers
}
