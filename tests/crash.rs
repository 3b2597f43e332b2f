//! Real crashes: the `worker` binary, under `cargo lambda watch`, killed with SIGKILL in the
//! middle of a step; the `sweeper` binary re-queues the run once its lease lapses, and a new
//! worker instance finishes it, running only the step that was in flight again. The same for
//! the CLI on its local file store: killed mid-step, `ask --resume` is refused while the lease
//! binds and finishes the run once it lapsed.
//!
//! The scripted model holds its first `generate_answer` reply, and the test kills the worker
//! once that request has arrived (the server's record says the worker is inside `generate`),
//! never after a guessed delay. The only wait is for the lease to lapse, computed from the
//! lease the checkpoint holds.

use crate::support;

use bounded_rag::entry::adapters::SqsQueue;
use bounded_rag::rag::{RagCheckpoint, RunRequest};
use bounded_rag::runs::{WorkMessage, WorkQueue};
use bounded_rag::store::{CheckpointStore, DynamoStore, Versioned};
use serde_json::{json, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::happy_path::{schedule, QUESTION, STEPS};
use support::lambda_watch::{alive, LambdaWatch};
use support::llm_server::{Reply, Script, ScriptedLlm};
use support::moto::{drain, moto, sqs_event, Moto};

const RUN: &str = "killed-mid-step";

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The functions' environment: moto, the scripted model, an 8 s budget per invocation (the
/// emulator's deadline is not a real one, so `RUN_TIMEOUT_MS` is the budget) and a 500 ms
/// margin, so a lease lasts 8.5 s past the start of its invocation.
fn env(
    moto: &Moto,
    table: &str,
    queue_url: &str,
    llm: &ScriptedLlm,
) -> Vec<(&'static str, String)> {
    let mut env = moto.function_env();
    env.extend([
        ("CHECKPOINT_TABLE", table.to_owned()),
        ("WORK_QUEUE_URL", queue_url.to_owned()),
        ("LLM_PROVIDER", "openai".to_owned()),
        ("LLM_BASE_URL", llm.base_url()),
        ("LLM_MODEL", "scripted-model".to_owned()),
        ("LLM_API_KEY", "sk-test".to_owned()),
        ("RUN_TIMEOUT_MS", "8000".to_owned()),
        // Crashes between the sequential path's steps (forks have the engine's own tests).
        ("SPECULATION", "off".to_owned()),
        ("DEADLINE_MARGIN_MS", "500".to_owned()),
        ("RUST_LOG", "bounded_rag=info,warn".to_owned()),
    ]);
    env
}

async fn checkpoint(store: &DynamoStore) -> (Versioned, RagCheckpoint) {
    let item = store
        .get(&format!("run#{RUN}"))
        .await
        .unwrap()
        .expect("the run's checkpoint");
    let cp = serde_json::from_slice(&item.body).expect("a RAG checkpoint");
    (item, cp)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_step_is_swept_and_finished_with_only_that_step_run_again() {
    let held = Reply::answer("Scripted answer [1].").delayed(Duration::from_secs(30));
    let llm = ScriptedLlm::start(Script::defaults().on(
        "generate_answer",
        [held, Reply::answer("Scripted answer [1].")],
    ))
    .await;
    let moto = moto().await;
    let table = moto.create_table().await;
    let queue_url = moto.create_queue().await;
    let sqs = moto.sqs().await;
    let store = DynamoStore::new(
        moto.dynamodb().await,
        table.clone(),
        Duration::from_secs(3_600),
    );
    let env = env(moto, &table, &queue_url, &llm);
    let first = LambdaWatch::start(&env).await;

    // An asynchronous run reaches the worker through the real queue.
    SqsQueue::new(sqs.clone(), queue_url.clone())
        .send(&WorkMessage {
            run_id: RUN.into(),
            request: Some(RunRequest::new(QUESTION)),
        })
        .await
        .unwrap();
    let messages = drain(&sqs, &queue_url).await;
    assert_eq!(messages.len(), 1);
    let event = serde_json::to_value(sqs_event(&messages)).unwrap();
    let pending = first.invoke_in_background("worker", event);

    // Inside `generate`: its model request has arrived and is being held.
    support::wait_until(|| llm.calls("generate_answer") == 1).await;
    assert_eq!(llm.calls("generate_answer"), 1, "{}", first.logs());
    let (before, before_cp) = checkpoint(&store).await;
    let done_before: Vec<&str> = before_cp.records.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        done_before,
        STEPS[..3],
        "three steps checkpointed before the kill"
    );
    let lease = before.lease.clone().expect("the worker holds the run");
    assert_eq!(llm.total_calls(), 1 + 3 + 1);

    let worker = first.function_pid("worker").expect("the worker process");
    // SAFETY: kill(2) on a pid this test's emulator started; no memory is involved.
    assert_eq!(unsafe { libc::kill(worker as i32, libc::SIGKILL) }, 0);
    for _ in 0..500 {
        if !alive(worker) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!alive(worker), "worker {worker} survived SIGKILL");
    pending.abort();

    // While the lease binds, nothing to sweep; once it lapsed, exactly one message.
    let schedule = schedule();
    let quiet = first.invoke("sweeper", &schedule).await;
    assert!(
        now_ms() < lease.expires_at_ms,
        "the lease lapsed before the first sweep"
    );
    assert_eq!(quiet["lapsed"], 0, "{quiet}");
    let wait = lease.expires_at_ms.saturating_sub(now_ms()) + 100;
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let swept = first.invoke("sweeper", &schedule).await;
    assert_eq!(
        swept,
        json!({"lapsed": 1, "requeued": 1, "skipped": 0, "failed": 0, "unlisted": 0})
    );
    let requeued = drain(&sqs, &queue_url).await;
    assert_eq!(requeued.len(), 1);
    assert_eq!(
        requeued[0].body(),
        Some(format!(r#"{{"run_id":"{RUN}"}}"#).as_str())
    );
    drop(first);

    // A new worker instance takes the lapsed lease and finishes the run.
    let second = LambdaWatch::start(&env).await;
    let event = serde_json::to_value(sqs_event(&requeued)).unwrap();
    let outcome = second.invoke("worker", &event).await;
    assert_eq!(
        outcome,
        json!({"batchItemFailures": []}),
        "{}",
        second.logs()
    );

    let (after, cp) = checkpoint(&store).await;
    assert_eq!(after.lease, None, "released when finished");
    let names: Vec<&str> = cp.records.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, STEPS);
    assert_eq!(cp.steps, 6);
    assert_eq!(
        cp.records[..3],
        before_cp.records[..],
        "the first steps are kept as they were"
    );
    assert_eq!(
        cp.usage.model_calls, 7,
        "the killed call never reached a checkpoint"
    );
    assert_eq!(llm.total_calls(), 7 + 1, "only the generate step ran twice");
    assert_eq!(llm.calls("generate_answer"), 2);
    assert_eq!(llm.calls("route_query"), 1);
    assert_eq!(llm.calls("grade_documents"), 3);
    let status = second.invoke("sweeper", &schedule).await;
    assert_eq!(status["lapsed"], 0, "{status}");
    assert!(drain(&sqs, &queue_url).await.is_empty());
}

/// `bounded-rag` with a clean environment: local file store in `state`, the scripted model, a
/// 3 s budget and a 500 ms margin, so a lease lasts 3.5 s past the start of a run.
fn cli(state: &std::path::Path, llm: &ScriptedLlm, args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_bounded-rag"));
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("STATE_DIR", state)
        .env("LLM_PROVIDER", "openai")
        .env("LLM_BASE_URL", llm.base_url())
        .env("LLM_MODEL", "scripted-model")
        .env("LLM_API_KEY", "sk-test")
        .env("RUN_TIMEOUT_MS", "3000")
        .env("SPECULATION", "off")
        .env("DEADLINE_MARGIN_MS", "500")
        .env("RUST_LOG", "warn")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    command
}

async fn output(mut command: std::process::Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || command.output().expect("the CLI runs"))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_run_killed_mid_step_resumes_once_its_lease_lapses_running_only_that_step_again() {
    let held = Reply::answer("Scripted answer [1].").delayed(Duration::from_secs(30));
    let llm = ScriptedLlm::start(Script::defaults().on(
        "generate_answer",
        [held, Reply::answer("Scripted answer [1].")],
    ))
    .await;
    let state = tempfile::tempdir().unwrap();
    let mut child = cli(state.path(), &llm, &["ask", QUESTION, "--json"])
        .spawn()
        .expect("the CLI starts");
    for _ in 0..1_500 {
        if llm.calls("generate_answer") == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(llm.calls("generate_answer"), 1, "never reached generate");
    // Its only run: `run#<id>` is stored as `run%23<id>.json`.
    let run_id = std::fs::read_dir(state.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .find_map(|name| {
            Some(
                name.strip_prefix("run%23")?
                    .strip_suffix(".json")?
                    .to_owned(),
            )
        })
        .expect("the run's checkpoint file");
    let store = bounded_rag::store::FileStore::open(state.path()).unwrap();
    let before = store.get(&format!("run#{run_id}")).await.unwrap().unwrap();
    let before_cp: RagCheckpoint = serde_json::from_slice(&before.body).unwrap();
    assert_eq!(before_cp.steps, 3);
    let lease = before.lease.clone().expect("the CLI holds its run");

    child.kill().expect("SIGKILL"); // std sends SIGKILL on Unix
    let killed = child.wait().unwrap();
    assert!(!killed.success());
    assert_eq!(llm.total_calls(), 1 + 3 + 1);

    // Too early: the lease still binds, nothing runs.
    let early = output(cli(
        state.path(),
        &llm,
        &["ask", "--resume", &run_id, "--json"],
    ))
    .await;
    assert!(
        now_ms() < lease.expires_at_ms,
        "the lease lapsed before the early resume"
    );
    assert_eq!(early.status.code(), Some(1), "{early:?}");
    assert_eq!(llm.total_calls(), 5, "a refused resume calls no model");

    let wait = lease.expires_at_ms.saturating_sub(now_ms()) + 100;
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let resumed = output(cli(
        state.path(),
        &llm,
        &["ask", "--resume", &run_id, "--json"],
    ))
    .await;
    assert!(resumed.status.success(), "{resumed:?}");
    let body: Value = serde_json::from_slice(&resumed.stdout).unwrap();
    assert_eq!(body["status"], "completed", "{body:#}");
    assert_eq!(body["metadata"]["total_steps"], 6);
    assert_eq!(body["metadata"]["model_calls"], 7);
    let names: Vec<&str> = body["workflow_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, STEPS);
    assert_eq!(llm.total_calls(), 7 + 1, "only generate ran twice");
    assert_eq!(llm.calls("generate_answer"), 2);
}
