//! Conversation threads through the HTTP handler (the real API Gateway v2 events of
//! `events/`) with the offline provider on the bundled sample: a two-turn conversation whose
//! follow-up is made to stand alone, caller isolation, `409 thread_busy` under concurrent
//! requests, deletion that leaves nothing readable, and a 1,000-turn thread.

use async_trait::async_trait;
use bounded_rag::clock::SystemClock;
use bounded_rag::config::Settings;
use bounded_rag::entry::{api, App};
use bounded_rag::llm::{ChatModel, ChatRequest, Completion, LlmError, OfflineModel, Task};
use bounded_rag::rag::{Caller, RagGraph, RagLimits, RunRequest};
use bounded_rag::store::{CheckpointStore, MemoryStore};
use serde_json::Value;
use sha2::Digest;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Semaphore;

const RUN: &str = include_str!("../events/apigw-run.json");
const RUN_JWT: &str = include_str!("../events/apigw-run-jwt.json");
const RUNS_GET: &str = include_str!("../events/apigw-runs-get.json");
const RUNS_GET_JWT: &str = include_str!("../events/apigw-runs-get-jwt.json");

/// The offline model, counting calls per task; calls wait for a permit while `gate` is set.
struct Gated {
    calls: AtomicUsize,
    contextualize: AtomicUsize,
    gate: Option<Arc<Semaphore>>,
}

#[async_trait]
impl ChatModel for Gated {
    async fn complete(&self, request: &ChatRequest<'_>) -> Result<Completion, LlmError> {
        if let Some(gate) = &self.gate {
            gate.acquire().await.expect("open").forget();
        }
        self.calls.fetch_add(1, Ordering::SeqCst);
        if request.task == Task::ContextualizeQuestion {
            self.contextualize.fetch_add(1, Ordering::SeqCst);
        }
        OfflineModel.complete(request).await
    }
    fn name(&self) -> &'static str {
        "offline"
    }
}

fn app_with(gate: Option<Arc<Semaphore>>) -> (App, Arc<Gated>, Arc<MemoryStore>) {
    let model = Arc::new(Gated {
        calls: AtomicUsize::new(0),
        contextualize: AtomicUsize::new(0),
        gate,
    });
    let kb = Arc::new(bounded_rag::ingest::sample_kb().unwrap());
    let graph = RagGraph::new(model.clone(), kb, None, RagLimits::default());
    let store = Arc::new(MemoryStore::new());
    let app = App::from_parts(
        Settings::default(),
        graph,
        store.clone(),
        Arc::new(SystemClock),
    );
    (app, model, store)
}

/// The event with `body` and, for a GET/DELETE, `method` on `path`.
fn event(base: &str, method: &str, path: &str, body: Option<&str>) -> String {
    let mut v: Value = serde_json::from_str(base).unwrap();
    v["rawPath"] = Value::String(path.to_owned());
    v["requestContext"]["http"]["method"] = Value::String(method.to_owned());
    v["requestContext"]["http"]["path"] = Value::String(path.to_owned());
    v["routeKey"] = Value::String(format!("{method} {path}"));
    match body {
        Some(b) => {
            v["body"] = Value::String(b.to_owned());
            v["headers"]["content-length"] = Value::String(b.len().to_string());
        }
        None => {
            v.as_object_mut().unwrap().remove("body");
        }
    }
    v.to_string()
}

async fn call(app: &App, event: &str) -> (u16, Value, Option<String>) {
    let request = lambda_http::request::from_str(event).expect("event parses");
    let response = api::handle(app, None, request).await;
    let retry = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), api::body_json(&response), retry)
}

async fn ask(app: &App, base: &str, thread: &str, question: &str) -> (u16, Value, Option<String>) {
    let body = serde_json::json!({ "question": question, "thread_id": thread }).to_string();
    call(app, &event(base, "POST", "/workflow/run", Some(&body))).await
}

fn names(run: &Value) -> Vec<String> {
    run["workflow_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_follow_up_stands_alone_and_cites_the_treatment_passages() {
    let (app, model, _) = app_with(None);
    let (s1, first, _) = ask(
        &app,
        RUN,
        "durian-chat",
        "What causes patch canker in durian?",
    )
    .await;
    assert_eq!(s1, 200, "{first}");
    assert_eq!(first["metadata"]["thread_id"], "durian-chat");
    assert_eq!(first["metadata"]["turn"], 1);
    assert!(!names(&first).contains(&"contextualize_question".to_owned()));
    assert_eq!(model.contextualize.load(Ordering::SeqCst), 0);
    let first_calls = first["metadata"]["model_calls"].as_u64().unwrap();

    let (s2, second, _) = ask(&app, RUN, "durian-chat", "How is it treated?").await;
    assert_eq!(s2, 200, "{second}");
    assert_eq!(second["metadata"]["turn"], 2);
    assert_eq!(second["question"], "How is it treated?");
    let standalone = second["metadata"]["standalone_question"].as_str().unwrap();
    assert!(
        standalone.contains("patch canker in durian"),
        "{standalone}"
    );
    let steps = names(&second);
    assert_eq!(steps[0], "contextualize_question");
    assert_eq!(steps[1], "route_question");
    assert_eq!(
        steps
            .iter()
            .filter(|s| *s == "contextualize_question")
            .count(),
        1
    );
    // Exactly one more model call: the contextualization, counted in the run's metadata.
    assert_eq!(model.contextualize.load(Ordering::SeqCst), 1);
    let second_calls = second["metadata"]["model_calls"].as_u64().unwrap();
    assert_eq!(
        model.calls.load(Ordering::SeqCst) as u64,
        first_calls + second_calls
    );
    let cited: Vec<&str> = second["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["url"].as_str().unwrap())
        .collect();
    // The follow-up's search finds the Management section (phosphonate injection, treating
    // lesions) of patch canker first; the answer cites the passages it quotes.
    assert_eq!(
        crate::support::happy_path::first_retrieved(&second),
        "kb://patch-canker.md#4",
        "{cited:?}"
    );
    assert!(!cited.is_empty());

    let (s, thread, _) = call(&app, &event(RUNS_GET, "GET", "/threads/durian-chat", None)).await;
    assert_eq!(s, 200, "{thread}");
    assert_eq!(thread["turn_count"], 2);
    let turns = thread["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0]["run_id"], first["run_id"]);
    assert_eq!(turns[1]["run_id"], second["run_id"]);
    assert_eq!(turns[1]["standalone_question"], standalone);
    assert_eq!(turns[1]["status"], "completed");
    assert!(thread["active_run_id"].is_null());
}

#[tokio::test]
async fn threads_belong_to_their_caller() {
    let (app, _, _) = app_with(None);
    let (s, mine, _) = ask(
        &app,
        RUN,
        "shared-id",
        "What causes patch canker in durian?",
    )
    .await;
    assert_eq!(s, 200, "{mine}");
    // Another caller: the thread is not found, not listed, and the same id is its own thread.
    let get = |base| event(base, "GET", "/threads/shared-id", None);
    assert_eq!(call(&app, &get(RUNS_GET_JWT)).await.0, 404);
    let list_jwt = event(RUNS_GET_JWT, "GET", "/threads", None);
    let (_, listed, _) = call(&app, &list_jwt).await;
    assert_eq!(listed["threads"].as_array().unwrap().len(), 0);
    let delete = event(RUNS_GET_JWT, "DELETE", "/threads/shared-id", None);
    assert_eq!(call(&app, &delete).await.0, 404);
    let (s, theirs, _) = ask(&app, RUN_JWT, "shared-id", "How is it treated?").await;
    assert_eq!(s, 200, "{theirs}");
    assert_eq!(theirs["metadata"]["turn"], 1);
    assert!(theirs["metadata"]["standalone_question"].is_null());
    let (_, mine_again, _) = call(&app, &get(RUNS_GET)).await;
    assert_eq!(mine_again["turn_count"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_turns_of_one_thread_get_409_and_are_never_both_appended() {
    let gate = Arc::new(Semaphore::new(0));
    let (app, _, _) = app_with(Some(gate.clone()));
    let app = Arc::new(app);
    let first = {
        let app = app.clone();
        tokio::spawn(
            async move { ask(&app, RUN, "busy", "What causes patch canker in durian?").await },
        )
    };
    // Wait until the first turn holds the thread (its first model call is waiting).
    let list = event(RUNS_GET, "GET", "/threads/busy", None);
    let active = loop {
        let (s, thread, _) = call(&app, &list).await;
        if s == 200 && thread["active_run_id"].is_string() {
            break thread["active_run_id"].as_str().unwrap().to_owned();
        }
        tokio::task::yield_now().await;
    };
    let others: Vec<_> = (0..4)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move { ask(&app, RUN, "busy", "How is it treated?").await })
        })
        .collect();
    for other in others {
        let (s, body, retry) = other.await.unwrap();
        assert_eq!(s, 409, "{body}");
        assert_eq!(body["error"], "thread_busy");
        assert_eq!(body["run_id"], active.as_str());
        assert!(retry.unwrap().parse::<u64>().unwrap() >= 1);
    }
    gate.add_permits(1_000);
    let (s, answered, _) = first.await.unwrap();
    assert_eq!(
        (s, answered["run_id"].as_str()),
        (200, Some(active.as_str()))
    );
    let (_, thread, _) = call(&app, &list).await;
    assert_eq!(thread["turn_count"], 1);
    assert_eq!(thread["turns"].as_array().unwrap().len(), 1);
    // Now free: the next turn is turn 2.
    let (s, next, _) = ask(&app, RUN, "busy", "How is it treated?").await;
    assert_eq!((s, next["metadata"]["turn"].as_u64()), (200, Some(2)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_turn_starts_admit_exactly_one() {
    let (app, _, _) = app_with(None);
    let app = Arc::new(app);
    let starts: Vec<_> = (0..8)
        .map(|i| {
            let app = app.clone();
            tokio::spawn(async move {
                app.runs()
                    .threads()
                    .begin(&Caller::Anonymous, "race", &format!("run-{i}"), "q")
                    .await
                    .is_ok()
            })
        })
        .collect();
    let mut admitted = 0;
    for start in starts {
        admitted += usize::from(start.await.unwrap());
    }
    assert_eq!(admitted, 1);
}

#[tokio::test]
async fn a_deleted_thread_leaves_nothing_readable() {
    let (app, _, store) = app_with(None);
    let (_, first, _) = ask(&app, RUN, "gone", "What causes patch canker in durian?").await;
    let (_, second, _) = ask(&app, RUN, "gone", "How is it treated?").await;
    let delete = event(RUNS_GET, "DELETE", "/threads/gone", None);
    let request = lambda_http::request::from_str(&delete).unwrap();
    let response = api::handle(&app, None, request).await;
    assert_eq!(response.status().as_u16(), 204);
    assert_eq!(
        call(&app, &event(RUNS_GET, "GET", "/threads/gone", None))
            .await
            .0,
        404
    );
    let (_, listed, _) = call(&app, &event(RUNS_GET, "GET", "/threads", None)).await;
    assert_eq!(listed["threads"].as_array().unwrap().len(), 0);
    for run in [&first, &second] {
        let id = run["run_id"].as_str().unwrap();
        let get = event(RUNS_GET, "GET", &format!("/workflow/runs/{id}"), None);
        assert_eq!(call(&app, &get).await.0, 404);
        assert!(store.get(&format!("run#{id}")).await.unwrap().is_none());
    }
    assert_eq!(call(&app, &delete).await.0, 404);
    // A new turn with the same id starts a new thread.
    let (_, again, _) = ask(&app, RUN, "gone", "How is it treated?").await;
    assert_eq!(again["metadata"]["turn"], 1);
}

#[tokio::test]
async fn a_thread_id_percent_encoded_in_the_path_names_the_same_thread() {
    // Found by schemathesis (`positive_data_acceptance`): `DELETE /threads/00%3ALLM`, a valid
    // id with its `:` encoded as clients may send it, was refused with 400.
    let (app, _, _) = app_with(None);
    let (s, run, _) = ask(
        &app,
        RUN,
        "team:durian",
        "What causes patch canker in durian?",
    )
    .await;
    assert_eq!(s, 200, "{run}");
    let (s, thread, _) = call(
        &app,
        &event(RUNS_GET, "GET", "/threads/team%3Adurian", None),
    )
    .await;
    assert_eq!(
        (s, thread["thread_id"].as_str()),
        (200, Some("team:durian"))
    );
    // An encoded `/` stays inside its segment: an invalid id, not another route.
    let (s, refused, _) = call(
        &app,
        &event(RUNS_GET, "GET", "/threads/team%2Fdurian", None),
    )
    .await;
    assert_eq!((s, refused["field"].as_str()), (400, Some("thread_id")));
    let delete = event(RUNS_GET, "DELETE", "/threads/team%3adurian", None);
    assert_eq!(call(&app, &delete).await.0, 204);
    let gone = event(RUNS_GET, "GET", "/threads/team:durian", None);
    assert_eq!(call(&app, &gone).await.0, 404);
}

#[tokio::test]
async fn a_thousand_turn_thread_keeps_a_bounded_head_and_pages_its_turns() {
    let (app, model, store) = app_with(None);
    let runs = app.runs();
    let digest: String = sha2::Sha256::digest(b"anonymous")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let head_key = format!("thread#{digest}#long");
    let mut sizes = Vec::new();
    for n in 1..=1_000u32 {
        let run_id = format!("run-{n}");
        let question = if n == 1 {
            "What causes patch canker in durian?"
        } else {
            "How is it treated?"
        };
        let mut request = RunRequest::new(question);
        request.mode = bounded_rag::rag::Mode::Speed;
        let thread = runs
            .threads()
            .begin(&Caller::Anonymous, "long", &run_id, question)
            .await
            .unwrap();
        assert_eq!(thread.turn, n);
        let budget = runs.budget(None);
        let response = runs
            .workflow()
            .in_thread(Some(&thread))
            .run_new(&run_id, request, &budget)
            .await
            .unwrap();
        assert_eq!(response.metadata.turn, Some(n));
        if n % 250 == 0 {
            sizes.push(store.get(&head_key).await.unwrap().unwrap().body.len());
        }
    }
    // O(1) writes per turn: two head writes (start, record) and one write of its turn item.
    let head = store.get(&head_key).await.unwrap().unwrap();
    assert_eq!(head.version, 2 * 1_000);
    for n in [1u32, 500, 1_000] {
        let turn_key = format!("turn#{digest}#long#{n:010}");
        assert_eq!(store.get(&turn_key).await.unwrap().unwrap().version, 1);
    }
    // The head holds THREAD_HISTORY_TURNS turns whatever the thread's length.
    let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
    assert!(max - min < 200, "{sizes:?}");
    // Each follow-up made one contextualize call.
    assert_eq!(model.contextualize.load(Ordering::SeqCst), 999);
    let page = event(RUNS_GET, "GET", "/threads/long", None);
    let mut v: Value = serde_json::from_str(&page).unwrap();
    v["queryStringParameters"] = serde_json::json!({ "after": "995", "limit": "10" });
    v["rawQueryString"] = Value::String("after=995&limit=10".into());
    // The turns were asked as the anonymous caller (no authorizer).
    v["requestContext"]
        .as_object_mut()
        .unwrap()
        .remove("authorizer");
    let (s, thread, _) = call(&app, &v.to_string()).await;
    assert_eq!(s, 200, "{thread}");
    assert_eq!(thread["turn_count"], 1_000);
    let turns: Vec<u64> = thread["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["turn"].as_u64().unwrap())
        .collect();
    assert_eq!(turns, [996, 997, 998, 999, 1_000]);
}
