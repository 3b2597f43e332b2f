//! A scripted OpenAI-compatible chat-completions server on loopback.
//!
//! `POST /v1/chat/completions` answers from a [`Script`] keyed by the request's
//! `response_format.json_schema.name`: each name has a queue of [`Reply`]s, served in order,
//! and the last one repeats forever (so `Script::new().on("grade_documents", [Reply::no()])`
//! means "grade_documents always answers no"). Every request is recorded with its schema
//! name, full JSON body, `Authorization` header and arrival time, so tests can assert exact
//! call counts and sequences. The server stops when the [`ScriptedLlm`] is dropped.
//!
//! ```ignore
//! let llm = ScriptedLlm::start(Script::defaults().on("grade_documents", [Reply::no()])).await;
//! let model = OpenAiModel::new(OpenAiConfig::new(llm.base_url(), "test-model"))?;
//! ```

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// What the server does with one request.
#[derive(Clone)]
pub enum Reply {
    /// 200 with this value, serialized, as `choices[0].message.content`.
    Json(Value),
    /// 200 with this exact string as the message content (e.g. malformed JSON).
    Raw(String),
    /// 200 with this whole response body instead of a chat-completions envelope.
    Body(Value),
    /// An HTTP error.
    Status {
        /// Status code.
        status: u16,
        /// `Retry-After` header value, if any (seconds or an HTTP-date).
        retry_after: Option<String>,
        /// Response body.
        body: String,
    },
    /// Wait, then reply.
    Delay(Duration, Box<Reply>),
    /// Decide from the request body.
    With(Arc<dyn Fn(&Value) -> Reply + Send + Sync>),
}

impl Reply {
    /// A valid JSON content value.
    pub fn json(value: Value) -> Self {
        Reply::Json(value)
    }
    /// Verbatim content, typically malformed.
    pub fn raw(content: impl Into<String>) -> Self {
        Reply::Raw(content.into())
    }
    /// An HTTP error with an OpenAI-style error body.
    pub fn status(status: u16) -> Self {
        Reply::Status {
            status,
            retry_after: None,
            body: json!({"error": {"message": format!("scripted HTTP {status}")}}).to_string(),
        }
    }
    /// Adds a `Retry-After` header to a [`Reply::Status`].
    pub fn retry_after(self, value: impl Into<String>) -> Self {
        match self {
            Reply::Status { status, body, .. } => Reply::Status {
                status,
                retry_after: Some(value.into()),
                body,
            },
            other => panic!("retry_after applies to Reply::status only, not {other:?}"),
        }
    }
    /// Replaces the body of a [`Reply::Status`].
    pub fn body(self, body: impl Into<String>) -> Self {
        match self {
            Reply::Status {
                status,
                retry_after,
                ..
            } => Reply::Status {
                status,
                retry_after,
                body: body.into(),
            },
            other => panic!("body applies to Reply::status only, not {other:?}"),
        }
    }
    /// The same reply after `delay`.
    pub fn delayed(self, delay: Duration) -> Self {
        Reply::Delay(delay, Box::new(self))
    }
    /// A reply computed from the request body.
    pub fn from_fn(f: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Self {
        Reply::With(Arc::new(f))
    }
    /// `{"binary_score": "yes"}`.
    pub fn yes() -> Self {
        Reply::json(json!({"binary_score": "yes"}))
    }
    /// `{"binary_score": "no"}`.
    pub fn no() -> Self {
        Reply::json(json!({"binary_score": "no"}))
    }
    /// `{"data_source": source}` (`kg_retrieval`, `web_search`, `llm_internal`).
    pub fn route(source: &str) -> Self {
        Reply::json(json!({"data_source": source}))
    }
    /// `{"answer": text}`.
    pub fn answer(text: &str) -> Self {
        Reply::json(json!({"answer": text}))
    }
    /// `{"refined_question": text}`.
    pub fn refined(text: &str) -> Self {
        Reply::json(json!({"refined_question": text}))
    }
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::Json(v) => write!(f, "Json({v})"),
            Reply::Raw(s) => write!(f, "Raw({s:?})"),
            Reply::Body(v) => write!(f, "Body({v})"),
            Reply::Status { status, .. } => write!(f, "Status({status})"),
            Reply::Delay(d, r) => write!(f, "Delay({d:?}, {r:?})"),
            Reply::With(_) => f.write_str("With(..)"),
        }
    }
}

/// Replies per schema name; the last reply of each queue repeats.
#[derive(Debug, Clone, Default)]
pub struct Script {
    queues: HashMap<String, VecDeque<Reply>>,
    fallback: Option<Reply>,
}

impl Script {
    /// An empty script: unscripted names get a 400 naming the schema.
    pub fn new() -> Self {
        Self::default()
    }

    /// The happy path: `kg_retrieval`, every grade `yes`, a fixed answer and rewrite.
    pub fn defaults() -> Self {
        Self::new()
            .on("route_query", [Reply::route("kg_retrieval")])
            .on("grade_documents", [Reply::yes()])
            .on("grade_hallucinations", [Reply::yes()])
            .on("grade_answer", [Reply::yes()])
            .on("refine_query", [Reply::refined("refined question")])
            .on("generate_answer", [Reply::answer("Scripted answer [1].")])
    }

    /// Replaces the queue of `name`: replies are served in order and the last one repeats.
    pub fn on(mut self, name: &str, replies: impl IntoIterator<Item = Reply>) -> Self {
        self.queues
            .insert(name.to_owned(), replies.into_iter().collect());
        self
    }

    /// The reply for names without a queue (and requests without a schema name).
    pub fn fallback(mut self, reply: Reply) -> Self {
        self.fallback = Some(reply);
        self
    }

    fn next(&mut self, name: &str) -> Reply {
        match self.queues.get_mut(name) {
            Some(queue) if queue.len() > 1 => queue.pop_front().expect("non-empty"),
            Some(queue) if !queue.is_empty() => queue[0].clone(),
            _ => self.fallback.clone().unwrap_or_else(|| {
                Reply::status(400).body(format!("no scripted reply for schema {name:?}"))
            }),
        }
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `response_format.json_schema.name`, or empty.
    pub name: String,
    /// The full request body (`Value::Null` when it was not JSON).
    pub body: Value,
    /// The `Authorization` header, if sent.
    pub authorization: Option<String>,
    /// When it arrived.
    pub at: Instant,
    /// The client's address: one port per pooled connection.
    pub peer: SocketAddr,
}

struct Shared {
    script: Mutex<Script>,
    log: Mutex<Vec<Recorded>>,
}

/// A running scripted server; stops on drop.
pub struct ScriptedLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl ScriptedLlm {
    /// Binds `127.0.0.1:0` and serves `script` until dropped.
    pub async fn start(script: Script) -> Self {
        let shared = Arc::new(Shared {
            script: Mutex::new(script),
            log: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let (shutdown, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
            .expect("scripted LLM server");
        });
        Self {
            addr,
            shared,
            shutdown: Some(shutdown),
        }
    }

    /// `http://127.0.0.1:PORT/v1`, the value for `LLM_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Replaces the queue of `name` while the server runs.
    pub fn script(&self, name: &str, replies: impl IntoIterator<Item = Reply>) {
        let mut script = self.shared.script.lock().unwrap();
        let updated = std::mem::take(&mut *script).on(name, replies);
        *script = updated;
    }

    /// Requests received for schema `name`.
    pub fn calls(&self, name: &str) -> usize {
        self.log().iter().filter(|r| r.name == name).count()
    }

    /// All requests received.
    pub fn total_calls(&self) -> usize {
        self.log().len()
    }

    /// Schema names in arrival order.
    pub fn sequence(&self) -> Vec<String> {
        self.log().iter().map(|r| r.name.clone()).collect()
    }

    /// Request bodies in arrival order.
    pub fn requests(&self) -> Vec<Value> {
        self.log().iter().map(|r| r.body.clone()).collect()
    }

    /// Everything recorded, in arrival order.
    pub fn recorded(&self) -> Vec<Recorded> {
        self.log().clone()
    }

    /// Forgets the recorded requests (the script is kept).
    pub fn clear(&self) {
        self.shared.log.lock().unwrap().clear();
    }

    fn log(&self) -> std::sync::MutexGuard<'_, Vec<Recorded>> {
        self.shared.log.lock().unwrap()
    }
}

impl Drop for ScriptedLlm {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

async fn complete(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let at = Instant::now();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let name = body["response_format"]["json_schema"]["name"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (reply, n) = {
        let mut log = shared.log.lock().unwrap();
        log.push(Recorded {
            name: name.clone(),
            body: body.clone(),
            authorization,
            at,
            peer,
        });
        // Pick under the log lock so the reply order matches the recorded order.
        (shared.script.lock().unwrap().next(&name), log.len())
    };
    respond(reply, &body, n).await
}

async fn respond(mut reply: Reply, request: &Value, n: usize) -> Response {
    let reply = loop {
        reply = match reply {
            Reply::Delay(delay, inner) => {
                tokio::time::sleep(delay).await;
                *inner
            }
            Reply::With(f) => f(request),
            other => break other,
        };
    };
    let content = match reply {
        Reply::Json(value) => value.to_string(),
        Reply::Raw(content) => content,
        Reply::Body(value) => return (StatusCode::OK, axum::Json(value)).into_response(),
        Reply::Status {
            status,
            retry_after,
            body,
        } => {
            let status = StatusCode::from_u16(status).expect("valid status code");
            let mut response =
                (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
            if let Some(value) = retry_after {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, value.parse().expect("header value"));
            }
            return response;
        }
        Reply::Delay(..) | Reply::With(_) => unreachable!("resolved above"),
    };
    let model = request["model"].as_str().unwrap_or("scripted");
    axum::Json(json!({
        "id": format!("chatcmpl-{n}"),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    }))
    .into_response()
}
