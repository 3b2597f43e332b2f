//! A person in the loop, through the HTTP handler with real API Gateway events over the
//! scripted OpenAI-compatible and Tavily-compatible servers: a run that asks back (clarify)
//! and one that waits for approval of its web search stop `waiting` having made only the
//! calls before the question, hold no lease an invocation binds, and go on from their
//! checkpoint when answered (`POST /workflow/runs/{run_id}/resume`) with exactly the calls of
//! the steps after it; a retried answer or fork with the same `Idempotency-Key` does nothing
//! twice; a wait nobody answers ends `best_effort` with `interrupt_timeout` through the
//! sweeper.

use crate::support;
use crate::support::run_body::step_names as names;

use bounded_rag::clock::{Clock, FakeClock, SystemClock};
use bounded_rag::config::{Gated, Interrupts};
use bounded_rag::entry::sweeper::Sweeper;
use bounded_rag::entry::{api, App};
use bounded_rag::rag::RagGraph;
use bounded_rag::runs::{MemoryQueue, WorkQueue};
use bounded_rag::search::{TavilyClient, TavilyConfig};
use bounded_rag::store::{CheckpointStore, MemoryStore};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use support::app::app_with;
use support::llm_server::{Reply, Script, ScriptedLlm};
use support::web_server::{ScriptedWeb, WebReply, WebResult};

const RUN: &str = include_str!("../events/apigw-run.json");
const RUN_JWT: &str = include_str!("../events/apigw-run-jwt.json");

/// The model calls of a knowledge-base run of the default script: route 1, grade_documents 3
/// (one per passage), generate 1, grade_hallucinations 1, grade_answer 1.
const RUN_CALLS: usize = 7;
/// A question whose subject nothing names.
const DANGLING: &str = "How do I treat it?";

/// `POST path` with `body` (and an `Idempotency-Key`), by the caller of `like`.
fn post(like: &str, path: &str, body: &Value, key: Option<&str>) -> String {
    let mut v: Value = serde_json::from_str(like).unwrap();
    v["rawPath"] = path.into();
    v["rawQueryString"] = "".into();
    v["requestContext"]["http"]["method"] = "POST".into();
    v["requestContext"]["http"]["path"] = path.into();
    if let Some(key) = key {
        v["headers"]["idempotency-key"] = key.into();
    }
    let body = body.to_string();
    v["headers"]["content-length"] = body.len().to_string().into();
    v["body"] = body.into();
    v.to_string()
}

fn ask(question: &str) -> String {
    post(RUN, "/workflow/run", &json!({ "question": question }), None)
}

fn resume(run_id: &str, body: Value, key: Option<&str>) -> String {
    post(RUN, &format!("/workflow/runs/{run_id}/resume"), &body, key)
}

async fn call(app: &App, queue: Option<&dyn WorkQueue>, event: &str) -> (u16, Value) {
    let request = lambda_http::request::from_str(event).expect("event parses");
    let response = api::handle(app, queue, request).await;
    (response.status().as_u16(), api::body_json(&response))
}

fn interrupts(clarify: bool, approve: &[Gated]) -> Interrupts {
    Interrupts {
        clarify,
        approve: approve.to_vec(),
        timeout: Duration::from_secs(600),
    }
}

fn web_server_client(web: &ScriptedWeb) -> Arc<TavilyClient> {
    Arc::new(
        TavilyClient::new(TavilyConfig {
            base_url: web.base_url(),
            api_key: None,
        })
        .unwrap(),
    )
}

fn app(
    llm: &ScriptedLlm,
    store: Arc<MemoryStore>,
    clock: Arc<dyn Clock>,
    graph: impl FnOnce(RagGraph) -> RagGraph,
) -> App {
    app_with(llm, store, clock, graph)
}

/// The lease on the run's item: a waiting run's is parked (no invocation holds it) and lapses
/// when the wait runs out.
async fn lease(store: &MemoryStore, run_id: &str) -> bounded_rag::store::Lease {
    let item = store.get(&format!("run#{run_id}")).await.unwrap().unwrap();
    item.lease.expect("a waiting run's lease is its timer")
}

#[tokio::test]
async fn a_question_nothing_names_is_asked_back_and_the_answer_runs_only_the_steps_after_it() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let store = Arc::new(MemoryStore::new());
    let app = app(&llm, store.clone(), Arc::new(SystemClock), |g| {
        g.with_interrupts(interrupts(true, &[]))
    });

    let (status, waiting) = call(&app, None, &ask(DANGLING)).await;
    assert_eq!(status, 200, "{waiting}");
    assert_eq!(waiting["status"], "waiting", "{waiting}");
    assert_eq!(waiting["interrupt"]["kind"], "clarify");
    let question = waiting["interrupt"]["question"].as_str().unwrap();
    assert!(question.contains("\"it\""), "{question}");
    let options = waiting["interrupt"]["options"].as_array().unwrap();
    assert!(
        !options.is_empty(),
        "the knowledge base's subjects are offered"
    );
    assert!(waiting["interrupt"]["expires_at"].is_string());
    assert_eq!(names(&waiting), ["clarify"]);
    assert_eq!(
        llm.total_calls(),
        0,
        "nothing is guessed: no model call before the answer"
    );
    let run_id = waiting["run_id"].as_str().unwrap().to_owned();
    let parked = lease(&store, &run_id).await;
    assert!(
        parked.is_parked(),
        "no invocation holds a waiting run: {parked:?}"
    );

    // Another caller cannot answer it.
    let other = post(
        RUN_JWT,
        &format!("/workflow/runs/{run_id}/resume"),
        &json!({"answer": "durian"}),
        None,
    );
    assert_eq!(call(&app, None, &other).await.0, 404);
    // An answer of the wrong kind names the field it should have sent.
    let (status, wrong) = call(&app, None, &resume(&run_id, json!({"approve": true}), None)).await;
    assert_eq!(
        (status, wrong["field"].as_str()),
        (400, Some("answer")),
        "{wrong}"
    );

    let answer = json!({"answer": "durian patch canker"});
    let (status, done) = call(&app, None, &resume(&run_id, answer.clone(), Some("k-1"))).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["run_id"], run_id.as_str());
    assert_eq!(done["question"], DANGLING, "the question as asked");
    assert_eq!(
        done["metadata"]["clarified_question"],
        "How do I treat durian patch canker?"
    );
    assert!(done.get("interrupt").is_none());
    // The step that asked is not run again; the run's usual steps follow it, once each.
    assert_eq!(
        names(&done),
        [
            "clarify",
            "route_question",
            "kg_retrieval",
            "grade_documents",
            "generate",
            "grade_hallucinations",
            "grade_answer"
        ]
    );
    assert_eq!(llm.total_calls(), RUN_CALLS);
    assert_eq!(done["metadata"]["total_steps"], 7);

    // The same answer retried with its key: the run as it stands, nothing run again.
    let (status, again) = call(&app, None, &resume(&run_id, answer.clone(), Some("k-1"))).await;
    assert_eq!((status, again["status"].as_str()), (200, Some("completed")));
    assert_eq!(again["workflow_steps"], done["workflow_steps"]);
    // The key with another body, and an answer to a run that no longer waits, are refused.
    let other_body = resume(&run_id, json!({"answer": "tokio"}), Some("k-1"));
    assert_eq!(call(&app, None, &other_body).await.0, 422);
    let (status, late) = call(&app, None, &resume(&run_id, answer, None)).await;
    assert_eq!(
        (status, late["error"].as_str()),
        (409, Some("run_not_waiting")),
        "{late}"
    );
    assert_eq!(llm.total_calls(), RUN_CALLS);
}

#[tokio::test]
async fn a_named_subject_or_clarify_off_is_answered_without_asking() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let store = Arc::new(MemoryStore::new());
    let on = app(&llm, store.clone(), Arc::new(SystemClock), |g| {
        g.with_interrupts(interrupts(true, &[]))
    });
    let (_, named) = call(&on, None, &ask("How do I treat durian patch canker?")).await;
    assert_eq!(named["status"], "completed", "{named}");
    assert_eq!(names(&named)[0], "route_question");
    let off = app(&llm, store, Arc::new(SystemClock), |g| g);
    let (_, guessed) = call(&off, None, &ask(DANGLING)).await;
    assert_eq!(guessed["status"], "completed", "{guessed}");
    assert_eq!(names(&guessed)[0], "route_question", "guessed, as before");
    let guessed_calls = guessed["metadata"]["model_calls"].as_u64().unwrap() as usize;
    assert_eq!(llm.total_calls(), RUN_CALLS + guessed_calls);
}

/// A web route whose search waits for approval, over `llm` and `web`.
fn gated_app(
    llm: &ScriptedLlm,
    web: &ScriptedWeb,
    store: Arc<MemoryStore>,
    clock: Arc<dyn Clock>,
) -> App {
    let search = web_server_client(web);
    app(llm, store, clock, move |g| {
        g.with_web_search(search)
            .with_interrupts(interrupts(false, &[Gated::WebSearch]))
    })
}

fn web_script() -> Script {
    Script::defaults().on("route_query", [Reply::route("web_search")])
}

fn web_results() -> WebReply {
    WebReply::results([WebResult::new(
        "Durian prices",
        "https://example.org/prices",
        "Durian sells for about 20 dollars a kilogram this season.",
        0.9,
    )])
}

#[tokio::test]
async fn an_approved_web_search_runs_once_after_the_wait_and_a_denied_one_never_runs() {
    let llm = ScriptedLlm::start(web_script()).await;
    let web = ScriptedWeb::start([web_results()]).await;
    let store = Arc::new(MemoryStore::new());
    let app = gated_app(&llm, &web, store.clone(), Arc::new(SystemClock));

    let (status, waiting) = call(&app, None, &ask("What does durian cost today?")).await;
    assert_eq!(
        (status, waiting["status"].as_str()),
        (200, Some("waiting")),
        "{waiting}"
    );
    assert_eq!(
        waiting["interrupt"],
        json!({
            "kind": "approve",
            "step": "web_search",
            "what": "What does durian cost today?",
            "expires_at": waiting["interrupt"]["expires_at"],
        })
    );
    assert_eq!(names(&waiting), ["route_question"]);
    assert_eq!(
        waiting["workflow_steps"][0]["details"]["interrupt"]["kind"],
        "approve"
    );
    assert_eq!(
        (llm.total_calls(), web.calls()),
        (1, 0),
        "nothing left the deployment"
    );
    let run_id = waiting["run_id"].as_str().unwrap().to_owned();
    assert!(lease(&store, &run_id).await.is_parked());

    let (status, done) = call(&app, None, &resume(&run_id, json!({"approve": true}), None)).await;
    assert_eq!(
        (status, done["status"].as_str()),
        (200, Some("completed")),
        "{done}"
    );
    assert_eq!(
        names(&done),
        [
            "route_question",
            "web_search",
            "generate",
            "grade_hallucinations",
            "grade_answer"
        ]
    );
    // route once (before the wait), then generate, grade_hallucinations, grade_answer.
    assert_eq!((llm.total_calls(), web.calls()), (4, 1));
    assert_eq!(
        llm.calls("route_query"),
        1,
        "the step that asked is not run again"
    );
    assert_eq!(
        done["metadata"]["approvals"],
        json!([{"step": "web_search", "approved": true}])
    );

    // Denied: the question goes to the knowledge base instead, and nothing is searched.
    let (_, waiting) = call(&app, None, &ask("What does durian cost this week?")).await;
    let run_id = waiting["run_id"].as_str().unwrap().to_owned();
    assert_eq!(llm.total_calls(), 5);
    let (status, denied) = call(
        &app,
        None,
        &resume(&run_id, json!({"approve": false}), None),
    )
    .await;
    assert_eq!(
        (status, denied["status"].as_str()),
        (200, Some("completed")),
        "{denied}"
    );
    assert_eq!(
        names(&denied),
        [
            "route_question",
            "web_search",
            "kg_retrieval",
            "grade_documents",
            "generate",
            "grade_hallucinations",
            "grade_answer"
        ]
    );
    assert_eq!(denied["workflow_steps"][1]["details"]["approved"], false);
    assert_eq!(web.calls(), 1, "a denied search never runs");
    // grade_documents 3, generate, grade_hallucinations, grade_answer after the wait.
    assert_eq!(llm.total_calls(), 5 + 6);
    assert_eq!(denied["metadata"]["route"], "kg_retrieval");
}

#[tokio::test]
async fn a_wait_nobody_answers_ends_best_effort_through_the_sweeper() {
    let llm = ScriptedLlm::start(web_script()).await;
    let web = ScriptedWeb::start([web_results()]).await;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::at_ms(SystemClock.now_ms()));
    let app = gated_app(&llm, &web, store.clone(), clock.clone());
    let (_, waiting) = call(&app, None, &ask("What does durian cost today?")).await;
    assert_eq!(waiting["status"], "waiting", "{waiting}");
    let run_id = waiting["run_id"].as_str().unwrap().to_owned();
    let queue = Arc::new(MemoryQueue::default());
    let sweeper = Sweeper::new(store.clone(), queue.clone(), clock.clone());
    let schedule = support::happy_path::schedule();

    // Before the wait runs out the sweeper leaves the run alone.
    clock.advance(Duration::from_secs(599));
    assert_eq!(sweeper.handle(&schedule).await.unwrap().requeued, 0);
    // Once it ran out: one continuation, and the worker ends the run with its best answer.
    clock.advance(Duration::from_secs(2));
    assert_eq!(sweeper.handle(&schedule).await.unwrap().requeued, 1);
    let sent = queue.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].run_id, run_id);
    let budget = app.runs().budget(None);
    let ended = app
        .runs()
        .workflow()
        .resume(&run_id, &budget)
        .await
        .unwrap();
    let ended = serde_json::to_value(&ended).unwrap();
    assert_eq!(ended["status"], "best_effort", "{ended}");
    assert_eq!(
        ended["metadata"]["limits_hit"],
        json!(["interrupt_timeout"])
    );
    let answer = ended["answer"].as_str().unwrap();
    assert!(answer.contains("not answered in time"), "{answer}");
    assert_eq!(
        (llm.total_calls(), web.calls()),
        (1, 0),
        "nothing ran after the wait"
    );
    // An answer after the timeout is refused, saying so.
    let (status, late) = call(&app, None, &resume(&run_id, json!({"approve": true}), None)).await;
    assert_eq!(
        (status, late["error"].as_str()),
        (409, Some("run_not_waiting")),
        "{late}"
    );

    // A run answered late, before any sweep, is ended then and refused as timed out.
    let (_, waiting) = call(&app, None, &ask("What does durian cost this week?")).await;
    let run_id = waiting["run_id"].as_str().unwrap().to_owned();
    clock.advance(Duration::from_secs(601));
    let (status, late) = call(&app, None, &resume(&run_id, json!({"approve": true}), None)).await;
    assert_eq!(
        (status, late["error"].as_str()),
        (409, Some("interrupt_timeout")),
        "{late}"
    );
    let (_, read) = call(&app, None, &support_get(&run_id)).await;
    assert_eq!(read["status"], "best_effort", "{read}");
    assert_eq!(read["metadata"]["limits_hit"], json!(["interrupt_timeout"]));
    assert_eq!((llm.total_calls(), web.calls()), (2, 0));
}

fn support_get(run_id: &str) -> String {
    include_str!("../events/apigw-runs-get.json")
        .replace("00000000-0000-4000-8000-000000000001", run_id)
}

#[tokio::test]
async fn a_retried_fork_with_the_same_key_makes_one_fork() {
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let app = app(
        &llm,
        Arc::new(MemoryStore::new()),
        Arc::new(SystemClock),
        |g| g,
    );
    let (_, run) = call(&app, None, &ask("How do I treat durian patch canker?")).await;
    assert_eq!(run["status"], "completed", "{run}");
    let run_id = run["run_id"].as_str().unwrap();
    let path = format!("/workflow/runs/{run_id}/fork");
    let body = json!({"from_step": 3});
    let (status, first) = call(&app, None, &post(RUN, &path, &body, Some("fork-1"))).await;
    assert_eq!(
        (status, first["status"].as_str()),
        (200, Some("completed")),
        "{first}"
    );
    let (status, second) = call(&app, None, &post(RUN, &path, &body, Some("fork-1"))).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["run_id"], first["run_id"], "one fork for one key");
    assert_eq!(
        llm.total_calls(),
        RUN_CALLS + 3,
        "the fork's three steps ran once"
    );
    let other = json!({"from_step": 2});
    assert_eq!(
        call(&app, None, &post(RUN, &path, &other, Some("fork-1")))
            .await
            .0,
        422
    );
    // Without a key, each request is a fork of its own.
    let (_, third) = call(&app, None, &post(RUN, &path, &body, None)).await;
    assert_ne!(third["run_id"], first["run_id"]);
    assert_eq!(llm.total_calls(), RUN_CALLS + 6);
}

/// An event bus that keeps what it took.
#[derive(Clone, Default)]
struct Bus(Arc<std::sync::Mutex<Vec<Value>>>);

#[async_trait::async_trait]
impl bounded_rag::events::EventSink for Bus {
    async fn put(&self, detail: &Value) -> Result<(), bounded_rag::events::SinkError> {
        self.0.lock().unwrap().push(detail.clone());
        Ok(())
    }
}

#[tokio::test]
async fn a_run_that_starts_to_wait_puts_one_waiting_event_without_the_question() {
    let llm = ScriptedLlm::start(web_script()).await;
    let web = ScriptedWeb::start([web_results()]).await;
    let (finished, waiting) = (Bus::default(), Bus::default());
    let events = bounded_rag::runs::CompletionEvents::new(Box::new(finished.clone()))
        .with_waiting(Box::new(waiting.clone()));
    let app = gated_app(
        &llm,
        &web,
        Arc::new(MemoryStore::new()),
        Arc::new(SystemClock),
    )
    .with_completion_events(events);
    let question = "What does durian cost today?";
    let (_, run) = call(&app, None, &ask(question)).await;
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    let put = waiting.0.lock().unwrap().clone();
    assert_eq!(put.len(), 1, "{put:?}");
    assert_eq!(put[0]["run_id"], run_id.as_str());
    assert_eq!(put[0]["interrupt"], "approve");
    assert_eq!(put[0]["step"], "web_search");
    assert_eq!(put[0]["expires_at"], run["interrupt"]["expires_at"]);
    assert!(
        !put[0].to_string().contains("durian"),
        "never the question: {}",
        put[0]
    );
    assert!(finished.0.lock().unwrap().is_empty(), "it has not finished");
    let (_, done) = call(&app, None, &resume(&run_id, json!({"approve": true}), None)).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(
        waiting.0.lock().unwrap().len(),
        1,
        "no second waiting event"
    );
    assert_eq!(finished.0.lock().unwrap().len(), 1, "one finished event");
}
