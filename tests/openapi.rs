//! `openapi.yaml` stays true: answers of the real handlers (`entry::api::handle`, and
//! `entry::stream_function::handle` for the streamed variant), driven with the events of `events/`
//! through every documented outcome, are checked against the operation they hit — status code
//! documented, content type listed, body valid against the schema (`$ref`s into
//! `components` resolved, formats checked), required headers present and well-formed. Finally
//! every documented status code of every operation must have been produced by some answer,
//! so the document cannot describe responses that no longer exist.

use crate::support;

use async_trait::async_trait;
use bounded_rag::entry::{api, stream_function, App};
use bounded_rag::runs::RunIndexer;
use bounded_rag::runs::{MemoryQueue, QueueError, WorkMessage, WorkQueue};
use bounded_rag::store::{
    CheckpointStore, Lease, ListPage, ListedStatus, MemoryStore, StoreError, Versioned,
};
use lambda_http::http::HeaderMap;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::app::{app, timed_app};
use support::llm_server::{Reply, Script, ScriptedLlm};

const SPEC: &str = include_str!("../openapi.yaml");
const RUN: &str = include_str!("../events/apigw-run.json");
const RUN_BAD: &str = include_str!("../events/apigw-run-bad.json");
const RUNS_START: &str = include_str!("../events/apigw-runs-start.json");
const RUNS_GET: &str = include_str!("../events/apigw-runs-get.json");
const RUNS_CANCEL: &str = include_str!("../events/apigw-runs-cancel.json");
const NOT_FOUND: &str = include_str!("../events/apigw-not-found.json");
const URL_RUN_ANONYMOUS: &str = include_str!("../events/apigw-url-run-anonymous.json");

/// Documented answers no test can produce deterministically, and why.
const UNREACHABLE: &[(&str, &str, &str)] = &[(
    "post",
    "/workflow/runs",
    "409: only when two requests with one Idempotency-Key race to create the same run",
)];

/// One answer of a handler.
#[derive(Debug)]
pub(crate) struct Exchange {
    method: String,
    path: String,
    pub(crate) status: u16,
    headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

/// The document, and the (method, path template, status) triples answers used.
pub(crate) struct Spec {
    pub(crate) doc: Value,
    seen: BTreeSet<(String, String, String)>,
}

impl Spec {
    pub(crate) fn load() -> Self {
        let doc: Value = serde_norway::from_str(SPEC).expect("openapi.yaml is YAML");
        assert!(
            doc["openapi"]
                .as_str()
                .is_some_and(|v| v.starts_with("3.1.")),
            "OpenAPI 3.1"
        );
        Self {
            doc,
            seen: BTreeSet::new(),
        }
    }

    /// Follows `$ref`s (`#/...` JSON pointers into this document).
    pub(crate) fn resolve<'a>(&'a self, mut value: &'a Value) -> &'a Value {
        while let Some(pointer) = value.get("$ref").and_then(Value::as_str) {
            let pointer = pointer.strip_prefix('#').expect("local $ref");
            value = self
                .doc
                .pointer(pointer)
                .unwrap_or_else(|| panic!("dangling $ref {pointer}"));
        }
        value
    }

    /// The path template and operation that `method path` hits, if documented.
    fn operation(&self, method: &str, path: &str) -> Option<(String, &Value)> {
        let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
        let paths = self.doc["paths"].as_object().expect("paths");
        paths.iter().find_map(|(template, item)| {
            let parts: Vec<&str> = template.split('/').collect();
            let matches = parts.len() == segments.len()
                && parts
                    .iter()
                    .zip(&segments)
                    .all(|(p, s)| p == s || (p.starts_with('{') && !s.is_empty()));
            let operation = item.get(method.to_ascii_lowercase())?;
            matches.then(|| (template.clone(), operation))
        })
    }

    /// Errors of `instance` against `schema` (a schema of this document).
    pub(crate) fn schema_errors(&self, schema: &Value, instance: &Value) -> Vec<String> {
        let mut schema = schema.clone();
        // `$ref`s point into `#/components/...`: carry the components along so they resolve.
        schema
            .as_object_mut()
            .expect("schema object")
            .insert("components".into(), self.doc["components"].clone());
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(&schema)
            .unwrap_or_else(|e| panic!("bad schema: {e}"));
        validator
            .iter_errors(instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect()
    }

    /// Checks one answer against the document; panics naming everything that does not fit.
    fn check(&mut self, x: &Exchange) {
        let context = format!(
            "{} {} -> {}: {}",
            x.method,
            x.path,
            x.status,
            String::from_utf8_lossy(&x.body)
        );
        let Some(content_type) = x.headers.get("content-type") else {
            // Only a documented answer without content (`204`) has no content type.
            let (template, operation) = self.operation(&x.method, &x.path).expect(&context);
            let status = x.status.to_string();
            let response = self.resolve(&operation["responses"][&status]);
            assert!(
                response.get("content").is_none() && x.body.is_empty(),
                "{context}"
            );
            self.seen
                .insert((x.method.to_ascii_lowercase(), template, status));
            return;
        };
        let content_type = content_type.to_str().unwrap().to_owned();
        let Some((template, operation)) = self.operation(&x.method, &x.path) else {
            // Not an operation (unknown route, another method): still the documented Error.
            assert!(matches!(x.status, 404 | 405), "{context}");
            assert_eq!(content_type, "application/json", "{context}");
            let error = self.doc["components"]["schemas"]["Error"].clone();
            let errors = self.schema_errors(&error, &serde_json::from_slice(&x.body).unwrap());
            assert!(errors.is_empty(), "{context}\n{errors:#?}");
            return;
        };
        let status = x.status.to_string();
        let responses = &operation["responses"];
        let documented = responses.get(&status).is_some();
        let response = self.resolve(
            responses
                .get(&status)
                .or_else(|| responses.get("default"))
                .unwrap_or_else(|| panic!("undocumented status: {context}")),
        );
        let media = response["content"]
            .get(&content_type)
            .unwrap_or_else(|| panic!("content type {content_type} not listed: {context}"));
        let schema = self.resolve(&media["schema"]).clone();
        // A text/event-stream body is checked event by event, as an SSE client (and
        // schemathesis) reads it.
        let instances = match content_type.as_str() {
            "application/json" => {
                vec![serde_json::from_slice(&x.body).unwrap_or_else(|e| panic!("{e}: {context}"))]
            }
            "text/event-stream" => events_of(&String::from_utf8(x.body.clone()).unwrap()),
            _ => vec![Value::String(String::from_utf8(x.body.clone()).unwrap())],
        };
        assert!(!instances.is_empty(), "{context}");
        for instance in &instances {
            let errors = self.schema_errors(&schema, instance);
            assert!(errors.is_empty(), "{context}\n{errors:#?}");
        }
        if let Some(headers) = response["headers"].as_object() {
            for (name, header) in headers {
                let header = self.resolve(header);
                match x.headers.get(name.as_str()) {
                    Some(value) => {
                        let value = Value::String(value.to_str().unwrap().to_owned());
                        let errors = self.schema_errors(&header["schema"], &value);
                        assert!(errors.is_empty(), "header {name}: {context}\n{errors:#?}");
                    }
                    None => assert!(
                        header["required"] != true,
                        "required header {name} missing: {context}"
                    ),
                }
            }
        }
        if documented {
            self.seen
                .insert((x.method.to_ascii_lowercase(), template, status));
        }
    }

    /// Every documented status of every operation that no answer produced.
    fn never_seen(&self) -> Vec<String> {
        let mut missing = Vec::new();
        for (template, item) in self.doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                for status in operation["responses"].as_object().unwrap().keys() {
                    let key = (method.clone(), template.clone(), status.clone());
                    let excused = UNREACHABLE.iter().any(|(m, t, why)| {
                        *m == method && *t == template && why.starts_with(status.as_str())
                    });
                    if status != "default" && !excused && !self.seen.contains(&key) {
                        missing.push(format!("{method} {template} {status}"));
                    }
                }
            }
        }
        missing
    }
}

// ---- events ----

/// A `/threads` request of the IAM caller of `events/apigw-runs-get.json`.
fn thread_event(method: &str, path: &str, query: &[(&str, &str)]) -> String {
    let mut v: Value = serde_json::from_str(RUNS_GET).unwrap();
    v["rawPath"] = json!(path);
    v["requestContext"]["http"]["method"] = json!(method);
    v["requestContext"]["http"]["path"] = json!(path);
    v["routeKey"] = json!(format!("{method} {path}"));
    v.as_object_mut().unwrap().remove("pathParameters");
    if !query.is_empty() {
        let map: serde_json::Map<String, Value> = query
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        v["queryStringParameters"] = Value::Object(map);
        let raw: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        v["rawQueryString"] = json!(raw.join("&"));
    }
    v.to_string()
}

/// The caller of `events/apigw-runs-get.json`.
fn iam_caller() -> bounded_rag::rag::Caller {
    let v: Value = serde_json::from_str(RUNS_GET).unwrap();
    let arn = v["requestContext"]["authorizer"]["iam"]["userArn"]
        .as_str()
        .unwrap();
    bounded_rag::rag::Caller::Iam(arn.to_owned())
}

pub(crate) fn with_body(event: &str, body: &str) -> String {
    let mut v: Value = serde_json::from_str(event).unwrap();
    v["body"] = Value::String(body.to_owned());
    v["headers"]["content-length"] = Value::String(body.len().to_string());
    v.to_string()
}

fn with_header(event: &str, name: &str, value: &str) -> String {
    let mut v: Value = serde_json::from_str(event).unwrap();
    v["headers"][name] = Value::String(value.to_owned());
    v.to_string()
}

fn get_event(run_id: &str) -> String {
    RUNS_GET.replace("00000000-0000-4000-8000-000000000001", run_id)
}

/// `GET {path}?{query}` as API Gateway sends it (the IAM caller of `apigw-runs-get.json`).
fn get_path_event(route: &str, path: &str, query: &[(&str, &str)]) -> String {
    let mut v: Value = serde_json::from_str(RUNS_GET).unwrap();
    let raw: Vec<String> = query.iter().map(|(k, val)| format!("{k}={val}")).collect();
    v["routeKey"] = json!(format!("GET {route}"));
    v["requestContext"]["routeKey"] = json!(format!("GET {route}"));
    v["rawPath"] = json!(path);
    v["requestContext"]["http"]["path"] = json!(path);
    v["rawQueryString"] = json!(raw.join("&"));
    if !query.is_empty() {
        let params: serde_json::Map<String, Value> = query
            .iter()
            .map(|(k, val)| ((*k).to_owned(), json!(val)))
            .collect();
        v["queryStringParameters"] = Value::Object(params);
    }
    v.to_string()
}

fn steps_event(run_id: &str, query: &[(&str, &str)]) -> String {
    let path = format!("/workflow/runs/{run_id}/steps");
    get_path_event("/workflow/runs/{run_id}/steps", &path, query)
}

fn list_event(query: &[(&str, &str)]) -> String {
    get_path_event("/workflow/runs", "/workflow/runs", query)
}

fn cancel_event(run_id: &str) -> String {
    RUNS_CANCEL.replace("00000000-0000-4000-8000-000000000001", run_id)
}

fn with_method(event: &str, method: &str) -> String {
    let mut v: Value = serde_json::from_str(event).unwrap();
    v["requestContext"]["http"]["method"] = method.into();
    v.to_string()
}

pub(crate) async fn call(app: &App, queue: Option<&dyn WorkQueue>, event: &str) -> Exchange {
    let request = lambda_http::request::from_str(event).expect("event parses");
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let response = api::handle(app, queue, request).await;
    Exchange {
        method,
        path,
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        body: response.body().as_ref().to_vec(),
    }
}

pub(crate) async fn call_stream(app: &'static App, event: &str) -> Exchange {
    let request = lambda_http::request::from_str(event).expect("event parses");
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let response = stream_function::handle(app, None, request).await;
    let (parts, body) = response.into_parts();
    let body = body
        .collect()
        .await
        .expect("stream body")
        .to_bytes()
        .to_vec();
    Exchange {
        method,
        path,
        status: parts.status.as_u16(),
        headers: parts.headers,
        body,
    }
}

pub(crate) fn json_of(x: &Exchange) -> Value {
    serde_json::from_slice(&x.body).unwrap_or(Value::Null)
}

// ---- faults ----

/// What [`Faulty`] breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    /// Every read fails, retryable.
    GetTransient,
    /// Every write fails for good.
    PutPermanent,
    /// Every write of an existing run loses to "another writer".
    LoseRunWrites,
}

/// A memory store that fails on demand.
struct Faulty {
    inner: MemoryStore,
    fault: Mutex<Fault>,
}

impl Faulty {
    fn set(&self, fault: Fault) {
        *self.fault.lock().unwrap() = fault;
    }
    fn fault(&self) -> Fault {
        *self.fault.lock().unwrap()
    }
}

#[async_trait]
impl CheckpointStore for Faulty {
    async fn get(&self, key: &str) -> Result<Option<Versioned>, StoreError> {
        match self.fault() {
            Fault::GetTransient => Err(StoreError::Transient("injected timeout".into())),
            _ => self.inner.get(key).await,
        }
    }
    async fn put(
        &self,
        key: &str,
        expected: u64,
        body: &[u8],
        lease: Option<&Lease>,
    ) -> Result<u64, StoreError> {
        match self.fault() {
            Fault::PutPermanent => Err(StoreError::Permanent("injected: access denied".into())),
            Fault::LoseRunWrites if key.starts_with("run#") && expected > 0 => {
                Err(StoreError::Conflict {
                    key: key.to_owned(),
                    expected,
                })
            }
            _ => self.inner.put(key, expected, body, lease).await,
        }
    }
    async fn list_owned(
        &self,
        owner: &str,
        status: Option<ListedStatus>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ListPage, StoreError> {
        match self.fault() {
            Fault::GetTransient => Err(StoreError::Transient("injected timeout".into())),
            _ => self.inner.list_owned(owner, status, limit, cursor).await,
        }
    }
    fn name(&self) -> &'static str {
        "faulty"
    }
}

/// A queue that refuses every message.
struct RefusingQueue(bool);

#[async_trait]
impl WorkQueue for RefusingQueue {
    async fn send(&self, _: &WorkMessage) -> Result<(), QueueError> {
        Err(if self.0 {
            QueueError::Transient("injected: throttled".into())
        } else {
            QueueError::Permanent("injected: queue does not exist".into())
        })
    }
}

#[test]
fn every_answer_of_the_handlers_fits_openapi_yaml_and_every_documented_one_occurs() {
    // One long conversation with the handlers: its futures nest deep in a debug build (boxed,
    // it still overflowed the 2 MB test thread's stack once the run state grew its
    // attribution), so it runs on a thread of its own with room for them.
    let conversation = std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(Box::pin(every_answer_fits_and_every_documented_one_occurs()));
        })
        .expect("thread");
    if let Err(panic) = conversation.join() {
        std::panic::resume_unwind(panic);
    }
}

async fn every_answer_fits_and_every_documented_one_occurs() {
    let mut spec = Spec::load();
    let mut answers = Vec::new();
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let queue = MemoryQueue::default();

    // Happy paths, bad input, idempotency, routes.
    let indexed = || Arc::new(MemoryStore::new().with_indexer(Arc::new(RunIndexer)));
    let main = app(&llm, indexed(), true);
    let done = call(&main, None, RUN).await;
    let run_id = json_of(&done)["run_id"].as_str().unwrap().to_owned();
    answers.push(done);
    answers.push(call(&main, None, &get_event(&run_id)).await);
    let started = call(&main, Some(&queue), RUNS_START).await;
    let queued_id = json_of(&started)["run_id"].as_str().unwrap().to_owned();
    answers.push(started);
    answers.push(call(&main, None, &get_event(&queued_id)).await);
    let keyed = with_header(RUNS_START, "idempotency-key", "k-1");
    answers.push(call(&main, Some(&queue), &keyed).await);
    answers.push(call(&main, Some(&queue), &keyed).await);
    let reused = with_body(&keyed, r#"{"question":"Another question?"}"#);
    answers.push(call(&main, Some(&queue), &reused).await);
    answers.push(call(&main, None, &with_header(RUN, "idempotency-key", "k-1")).await);
    answers.push(call(&main, None, RUN_BAD).await);
    answers.push(call(&main, Some(&queue), &with_body(RUNS_START, "[]")).await);
    let long_key = "k".repeat(300);
    answers.push(call(&main, None, &with_header(RUN, "idempotency-key", &long_key)).await);
    answers.push(call(&main, None, &get_event("not.a.run.id")).await);
    answers.push(
        call(
            &main,
            None,
            &get_event("00000000-0000-4000-8000-00000000dead"),
        )
        .await,
    );
    let big = format!(r#"{{"question":"{}"}}"#, "x".repeat(70_000));
    answers.push(call(&main, None, &with_body(RUN, &big)).await);
    answers.push(call(&main, Some(&queue), &with_body(RUNS_START, &big)).await);
    answers.push(call(&main, None, NOT_FOUND).await);
    answers.push(call(&main, None, &with_method(RUN, "GET")).await);
    answers.push(call(&main, None, &with_method(&get_event(&run_id), "DELETE")).await);

    // History: a run's steps, paged; the caller's runs, paged and filtered.
    let first = call(&main, None, &steps_event(&run_id, &[("limit", "2")])).await;
    assert_eq!(json_of(&first)["next_after"], 2, "{first:?}");
    answers.push(first);
    answers.push(call(&main, None, &steps_event(&run_id, &[("after", "2")])).await);
    answers.push(call(&main, None, &steps_event(&run_id, &[("after", "-1")])).await);
    answers.push(
        call(
            &main,
            None,
            &steps_event("00000000-0000-4000-8000-00000000dead", &[]),
        )
        .await,
    );
    let listed = call(&main, None, &list_event(&[("limit", "1")])).await;
    let cursor = json_of(&listed)["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    answers.push(listed);
    answers.push(
        call(
            &main,
            None,
            &list_event(&[("cursor", &cursor), ("status", "completed")]),
        )
        .await,
    );
    answers.push(call(&main, None, &list_event(&[("status", "done")])).await);
    answers.push(call(&main, None, &list_event(&[("cursor", "bm90LWEtY3Vyc29y")])).await);
    answers.push(
        call(
            &main,
            None,
            &with_method(&steps_event(&run_id, &[]), "POST"),
        )
        .await,
    );

    // Cancel: a queued run (200, and 200 again), a finished one (409), bad and unknown ids.
    for _ in 0..2 {
        let cancelled = call(&main, None, &cancel_event(&queued_id)).await;
        assert_eq!(json_of(&cancelled)["status"], "cancelled", "{cancelled:?}");
        answers.push(cancelled);
    }
    let refused = call(&main, None, &cancel_event(&run_id)).await;
    assert_eq!(refused.status, 409, "{refused:?}");
    answers.push(refused);
    answers.push(call(&main, None, &cancel_event("not.a.run.id")).await);
    answers.push(
        call(
            &main,
            None,
            &cancel_event("00000000-0000-4000-8000-00000000dead"),
        )
        .await,
    );
    answers.push(call(&main, None, &with_method(&cancel_event(&run_id), "GET")).await);

    // Forks: every documented answer of the fork route.
    let forks = tokio::spawn(crate::openapi_fork::fork_answers());
    answers.extend(forks.await.expect("the fork answers"));

    // No queue: asynchronous runs are 501.
    let no_queue = app(&llm, Arc::new(MemoryStore::new()), false);
    answers.push(call(&no_queue, None, RUNS_START).await);
    // A store that cannot list runs: 500.
    answers.push(call(&no_queue, None, &list_event(&[])).await);

    // The active-run cap, on both POST routes and before a stream starts.
    let capped =
        app(&llm, Arc::new(MemoryStore::new()), true).with_max_active_runs_per_caller(Some(1));
    let capped: &'static App = Box::leak(Box::new(capped));
    answers.push(call(capped, Some(&queue), RUNS_START).await);
    answers.push(call(capped, Some(&queue), RUNS_START).await);
    answers.push(call(capped, Some(&queue), RUN).await);
    let refused = call_stream(capped, RUN).await;
    assert_eq!(refused.status, 429, "{refused:?}");
    answers.push(refused);

    // The per-caller request rate, on both POST routes.
    let limited = app(&llm, Arc::new(MemoryStore::new()), true)
        .with_max_requests_per_caller_per_minute(Some(1));
    answers.push(call(&limited, Some(&queue), RUNS_START).await);
    for event in [RUNS_START, RUN] {
        let refused = call(&limited, Some(&queue), event).await;
        assert_eq!(
            json_of(&refused)["error"],
            "too_many_requests",
            "{refused:?}"
        );
        answers.push(refused);
    }

    // The streamed variant: text/event-stream, ending with the JSON body as `final`.
    let streaming: &'static App =
        Box::leak(Box::new(app(&llm, Arc::new(MemoryStore::new()), false)));
    let streamed = call_stream(streaming, URL_RUN_ANONYMOUS).await;
    let text = String::from_utf8(streamed.body.clone()).unwrap();
    let last = text.trim_end().rsplit("\n\n").next().unwrap();
    let data = last
        .strip_prefix("id: 6.end\nevent: final\ndata: ")
        .expect("ends with final");
    let final_body = Exchange {
        method: "POST".into(),
        path: "/workflow/run".into(),
        status: 200,
        headers: {
            let mut h = HeaderMap::new();
            h.insert("content-type", "application/json".parse().unwrap());
            h
        },
        body: data.as_bytes().to_vec(),
    };
    answers.push(streamed);
    answers.push(final_body);

    // A stream picked back up with Last-Event-ID: replayed steps and `final` (200), a bad
    // id (400), another caller's or no run (404).
    let mine = call_stream(streaming, RUN).await;
    let mine_id = mine.headers["x-run-id"].to_str().unwrap().to_owned();
    let events_path = format!("/workflow/runs/{mine_id}/events");
    let resume = |id: &str| {
        with_header(
            &get_path_event("/workflow/runs/{run_id}/events", &events_path, &[]),
            "last-event-id",
            id,
        )
    };
    let resumed = call_stream(streaming, &resume("4.2")).await;
    let text = String::from_utf8(resumed.body.clone()).unwrap();
    assert!(text.starts_with("id: 5\nevent: step\n"), "{text}");
    assert!(text.contains("id: 6.end\nevent: final\n"), "{text}");
    answers.push(resumed);
    answers.push(call_stream(streaming, &resume("four")).await);
    let unknown = "/workflow/runs/00000000-0000-4000-8000-00000000dead/events";
    answers.push(
        call_stream(
            streaming,
            &get_path_event("/workflow/runs/{run_id}/events", unknown, &[]),
        )
        .await,
    );

    // Out of budget with a queue: 202 suspended.
    let (timed, _clock) = timed_app(&llm, Duration::from_millis(200), Duration::from_millis(700));
    answers.push(call(&timed, Some(&queue), RUN).await);

    // Failed runs: permanent (502), transient (503), and how GET shows them.
    let refusing =
        ScriptedLlm::start(Script::defaults().on("route_query", [Reply::status(400)])).await;
    let failing = app(&refusing, Arc::new(MemoryStore::new()), false);
    let failed = call(&failing, None, RUN).await;
    let failed_id = json_of(&failed)["run_id"].as_str().unwrap().to_owned();
    answers.push(failed);
    answers.push(call(&failing, None, &get_event(&failed_id)).await);
    let down = ScriptedLlm::start(Script::defaults().on("route_query", [Reply::status(500)])).await;
    answers.push(call(&app(&down, Arc::new(MemoryStore::new()), false), None, RUN).await);

    // Store and queue faults.
    let faulty = Arc::new(Faulty {
        inner: MemoryStore::new(),
        fault: Mutex::new(Fault::None),
    });
    let shaky = app(&llm, faulty.clone(), true);
    let stored = call(&shaky, None, RUN).await;
    let stored_id = json_of(&stored)["run_id"].as_str().unwrap().to_owned();
    faulty.set(Fault::GetTransient);
    answers.push(call(&shaky, None, &get_event(&stored_id)).await);
    answers.push(call(&shaky, None, &cancel_event(&stored_id)).await);
    answers.push(call(&shaky, None, &steps_event(&stored_id, &[])).await);
    answers.push(call(&shaky, None, &list_event(&[])).await);
    faulty.set(Fault::PutPermanent);
    answers.push(call(&shaky, None, RUN).await);
    answers.push(call(&shaky, Some(&queue), RUNS_START).await);
    faulty.set(Fault::LoseRunWrites);
    answers.push(call(&shaky, None, RUN).await);
    faulty.set(Fault::None);
    let corrupt = "00000000-0000-4000-8000-0000000000cc";
    faulty
        .put(&format!("run#{corrupt}"), 0, b"{not a checkpoint", None)
        .await
        .unwrap();
    answers.push(call(&shaky, None, &get_event(corrupt)).await);
    answers.push(call(&shaky, None, &cancel_event(corrupt)).await);
    answers.push(call(&shaky, None, &steps_event(corrupt, &[])).await);
    answers.push(call(&shaky, Some(&RefusingQueue(true)), RUNS_START).await);
    answers.push(call(&shaky, Some(&RefusingQueue(false)), RUNS_START).await);

    // A repeat while another invocation holds the run: 202 running.
    let same_body = with_body(
        RUNS_START,
        r#"{"question":"What causes patch canker in durian?"}"#,
    );
    let held = with_header(&same_body, "idempotency-key", "held");
    let queued = call(&shaky, Some(&queue), &held).await;
    let held_id = json_of(&queued)["run_id"].as_str().unwrap().to_owned();
    let key = format!("run#{held_id}");
    let item = faulty.get(&key).await.unwrap().unwrap();
    let lease = Lease {
        owner: "another-invocation".into(),
        expires_at_ms: u64::MAX / 2,
    };
    faulty
        .put(&key, item.version, &item.body, Some(&lease))
        .await
        .unwrap();
    let repeat = call(&shaky, None, &with_header(RUN, "idempotency-key", "held")).await;
    assert_eq!(
        (repeat.status, json_of(&repeat)["status"].clone()),
        (202, json!("running"))
    );
    answers.push(repeat);

    // Threads: two turns, the routes, a busy thread and the deletion path.
    let chat = app(&llm, Arc::new(MemoryStore::new()), false);
    let turn = |q: &str| {
        with_body(
            RUN,
            &json!({ "question": q, "thread_id": "chat" }).to_string(),
        )
    };
    answers.push(call(&chat, None, &turn("What causes patch canker in durian?")).await);
    answers.push(call(&chat, None, &turn("How is it treated?")).await);
    answers.push(call(&chat, None, &thread_event("GET", "/threads", &[])).await);
    for cursor in ["", "bm90LWEtY3Vyc29y"] {
        let page = call(
            &chat,
            None,
            &thread_event("GET", "/threads", &[("cursor", cursor)]),
        )
        .await;
        assert_eq!(page.status, 400, "{page:?}");
        answers.push(page);
    }
    let page = call(
        &chat,
        None,
        &thread_event("GET", "/threads", &[("limit", "0")]),
    )
    .await;
    assert_eq!(page.status, 400);
    answers.push(page);
    answers.push(
        call(
            &chat,
            None,
            &thread_event("GET", "/threads/chat", &[("limit", "1")]),
        )
        .await,
    );
    answers.push(call(&chat, None, &thread_event("GET", "/threads/no.such", &[])).await);
    answers.push(call(&chat, None, &thread_event("GET", "/threads/bad%20id", &[])).await);
    answers.push(
        call(
            &chat,
            None,
            &thread_event("DELETE", "/threads/no.such", &[]),
        )
        .await,
    );
    answers.push(
        call(
            &chat,
            None,
            &thread_event("DELETE", "/threads/bad%20id", &[]),
        )
        .await,
    );
    chat.runs()
        .threads()
        .begin(&iam_caller(), "held", "held-run", "q")
        .await
        .unwrap();
    let busy = with_body(
        RUN,
        r#"{"question":"How is it treated?","thread_id":"held"}"#,
    );
    let refused = call(&chat, None, &busy).await;
    assert_eq!(
        (refused.status, json_of(&refused)["error"].clone()),
        (409, json!("thread_busy"))
    );
    answers.push(refused);
    answers.push(call(&chat, None, &thread_event("DELETE", "/threads/held", &[])).await);
    let deleted = call(&chat, None, &thread_event("DELETE", "/threads/chat", &[])).await;
    assert_eq!(deleted.status, 204);
    answers.push(deleted);

    for answer in &answers {
        spec.check(answer);
    }
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert!(
        statuses.contains(&429) && statuses.contains(&409),
        "{statuses:?}"
    );
    let missing = spec.never_seen();
    assert!(
        missing.is_empty(),
        "documented but never answered (a test is missing, or the document is stale): {missing:#?}"
    );
}

#[test]
fn the_checker_refuses_answers_that_do_not_fit() {
    let json_headers = || {
        let mut h = HeaderMap::new();
        h.insert("content-type", "application/json".parse().unwrap());
        h
    };
    let wrong = [
        // A run without its metadata.
        (
            200,
            json!({"success": true, "status": "completed", "run_id": "r"}),
        ),
        // An undocumented status code: it falls back to `default`, an Error.
        (418, json!({"run_id": "r"})),
        // An error kind that does not exist.
        (404, json!({"error": "gone", "message": "x"})),
    ];
    for (status, body) in wrong {
        let exchange = Exchange {
            method: "GET".into(),
            path: "/workflow/runs/r".into(),
            status,
            headers: json_headers(),
            body: body.to_string().into_bytes(),
        };
        let caught = std::panic::catch_unwind(move || Spec::load().check(&exchange));
        assert!(caught.is_err(), "{status} {body} was accepted");
    }
    // A 429 without Retry-After.
    let exchange = Exchange {
        method: "POST".into(),
        path: "/workflow/run".into(),
        status: 429,
        headers: json_headers(),
        body: json!({"error": "too_many_active_runs", "message": "m", "limit": 1,
                     "active_run_ids": [], "retry_after_seconds": 1,
                     "retry_at": "2026-01-01T00:00:00Z"})
        .to_string()
        .into_bytes(),
    };
    let caught = std::panic::catch_unwind(move || Spec::load().check(&exchange));
    assert!(caught.is_err(), "a 429 without Retry-After was accepted");
}

/// The events of a `text/event-stream` body: `{id, event, data}` per frame, as read by a
/// client.
fn events_of(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter(|frame| !frame.trim().is_empty())
        .map(|frame| {
            let mut event = serde_json::Map::new();
            for line in frame.lines() {
                let (field, value) = line.split_once(": ").unwrap_or((line, ""));
                event.insert(field.to_owned(), Value::String(value.to_owned()));
            }
            Value::Object(event)
        })
        .collect()
}
