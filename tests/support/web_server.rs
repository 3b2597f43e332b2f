//! A scripted Tavily-compatible web search server on loopback.
//!
//! `POST /search` answers from a queue of [`WebReply`]s, served in order, the last one
//! repeating forever (an empty script answers `{"results": []}`). Every request, including
//! ones to other paths (answered 404), is recorded with its path, JSON body, `Authorization`
//! header and arrival time, so tests can assert the request shape and exact call counts.
//! The server stops when the [`ScriptedWeb`] is dropped.
//!
//! ```ignore
//! let web = ScriptedWeb::start([WebReply::results([WebResult::new("T", "https://x", "c", 0.9)])]).await;
//! let client = TavilyClient::new(TavilyConfig { base_url: web.base_url(), api_key: None })?;
//! ```
//!
//! Tests that block their thread (for example on a CLI child process) use
//! [`ScriptedWeb::start_in_thread`], which serves from a runtime of its own.

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// One search result as Tavily returns it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WebResult {
    /// Page title.
    pub title: String,
    /// Page URL.
    pub url: String,
    /// Extracted text.
    pub content: String,
    /// Relevance score.
    pub score: f32,
}

impl WebResult {
    /// A result.
    pub fn new(title: &str, url: &str, content: &str, score: f32) -> Self {
        Self {
            title: title.into(),
            url: url.into(),
            content: content.into(),
            score,
        }
    }
}

/// What the server does with one search request.
#[derive(Clone)]
pub enum WebReply {
    /// 200 with `{"results": [...]}`.
    Results(Vec<WebResult>),
    /// 200 with this whole JSON body.
    Body(Value),
    /// 200 with this exact text (e.g. malformed JSON).
    Raw(String),
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
    Delay(Duration, Box<WebReply>),
    /// Decide from the request body.
    With(Arc<dyn Fn(&Value) -> WebReply + Send + Sync>),
}

impl WebReply {
    /// 200 with these results.
    pub fn results(results: impl IntoIterator<Item = WebResult>) -> Self {
        WebReply::Results(results.into_iter().collect())
    }
    /// 200 with no results.
    pub fn empty() -> Self {
        WebReply::Results(Vec::new())
    }
    /// `max_results` results that quote the query, from `https://example.com/<n>`.
    pub fn echo() -> Self {
        WebReply::from_fn(|request| {
            let query = request["query"].as_str().unwrap_or_default();
            let n = request["max_results"].as_u64().unwrap_or(1).max(1);
            WebReply::results((1..=n).map(|i| {
                WebResult::new(
                    &format!("Web result {i}"),
                    &format!("https://example.com/{i}"),
                    &format!("A web page about: {query}"),
                    1.0 / i as f32,
                )
            }))
        })
    }
    /// An HTTP error with a Tavily-style error body.
    pub fn status(status: u16) -> Self {
        WebReply::Status {
            status,
            retry_after: None,
            body: json!({"detail": {"error": format!("scripted HTTP {status}")}}).to_string(),
        }
    }
    /// Adds a `Retry-After` header to a [`WebReply::status`].
    pub fn retry_after(self, value: impl Into<String>) -> Self {
        match self {
            WebReply::Status { status, body, .. } => WebReply::Status {
                status,
                retry_after: Some(value.into()),
                body,
            },
            other => panic!("retry_after applies to WebReply::status only, not {other:?}"),
        }
    }
    /// Replaces the body of a [`WebReply::status`].
    pub fn body(self, body: impl Into<String>) -> Self {
        match self {
            WebReply::Status {
                status,
                retry_after,
                ..
            } => WebReply::Status {
                status,
                retry_after,
                body: body.into(),
            },
            other => panic!("body applies to WebReply::status only, not {other:?}"),
        }
    }
    /// The same reply after `delay`.
    pub fn delayed(self, delay: Duration) -> Self {
        WebReply::Delay(delay, Box::new(self))
    }
    /// A reply computed from the request body.
    pub fn from_fn(f: impl Fn(&Value) -> WebReply + Send + Sync + 'static) -> Self {
        WebReply::With(Arc::new(f))
    }
}

impl std::fmt::Debug for WebReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WebReply::Results(r) => write!(f, "Results({} results)", r.len()),
            WebReply::Body(v) => write!(f, "Body({v})"),
            WebReply::Raw(s) => write!(f, "Raw({s:?})"),
            WebReply::Status { status, .. } => write!(f, "Status({status})"),
            WebReply::Delay(d, r) => write!(f, "Delay({d:?}, {r:?})"),
            WebReply::With(_) => f.write_str("With(..)"),
        }
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct WebCall {
    /// Request path, e.g. `/search`.
    pub path: String,
    /// The JSON body (`Value::Null` when it was not JSON).
    pub body: Value,
    /// The `Authorization` header, if sent.
    pub authorization: Option<String>,
    /// When it arrived.
    pub at: Instant,
    /// The client's address: one port per pooled connection.
    pub peer: SocketAddr,
}

impl WebCall {
    /// `body.query`.
    pub fn query(&self) -> Option<&str> {
        self.body["query"].as_str()
    }
    /// `body.max_results`.
    pub fn max_results(&self) -> Option<u64> {
        self.body["max_results"].as_u64()
    }
}

struct Shared {
    script: Mutex<VecDeque<WebReply>>,
    log: Mutex<Vec<WebCall>>,
}

/// A running scripted web search server; stops on drop.
pub struct ScriptedWeb {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ScriptedWeb {
    /// Binds `127.0.0.1:0` on the current runtime and serves `replies` until dropped.
    pub async fn start(replies: impl IntoIterator<Item = WebReply>) -> Self {
        let shared = Self::shared(replies);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let (shutdown, stopped) = oneshot::channel::<()>();
        tokio::spawn(serve(listener, shared.clone(), stopped));
        Self {
            addr,
            shared,
            shutdown: Some(shutdown),
            thread: None,
        }
    }

    /// Like [`ScriptedWeb::start`], but served by a thread with its own runtime, for tests
    /// that block (a CLI child process, a synchronous test).
    pub fn start_in_thread(replies: impl IntoIterator<Item = WebReply>) -> Self {
        let shared = Self::shared(replies);
        let (shutdown, stopped) = oneshot::channel::<()>();
        let (bound, addr) = std::sync::mpsc::channel();
        let served = shared.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind loopback");
                bound.send(listener.local_addr().expect("local addr")).ok();
                serve(listener, served, stopped).await;
            });
        });
        Self {
            addr: addr.recv().expect("server thread started"),
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    fn shared(replies: impl IntoIterator<Item = WebReply>) -> Arc<Shared> {
        Arc::new(Shared {
            script: Mutex::new(replies.into_iter().collect()),
            log: Mutex::new(Vec::new()),
        })
    }

    /// `http://127.0.0.1:PORT`, the value for `WEB_SEARCH_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Replaces the reply queue while the server runs.
    pub fn script(&self, replies: impl IntoIterator<Item = WebReply>) {
        *self.shared.script.lock().unwrap() = replies.into_iter().collect();
    }

    /// Number of `POST /search` requests received.
    pub fn calls(&self) -> usize {
        self.log().iter().filter(|c| c.path == "/search").count()
    }

    /// Everything recorded (all paths), in arrival order.
    pub fn recorded(&self) -> Vec<WebCall> {
        self.log().clone()
    }

    /// Search queries in arrival order.
    pub fn queries(&self) -> Vec<String> {
        self.log()
            .iter()
            .filter_map(|c| c.query().map(str::to_owned))
            .collect()
    }

    /// The last request received, if any.
    pub fn last(&self) -> Option<WebCall> {
        self.log().last().cloned()
    }

    /// Forgets the recorded requests (the script is kept).
    pub fn clear(&self) {
        self.shared.log.lock().unwrap().clear();
    }

    fn log(&self) -> std::sync::MutexGuard<'_, Vec<WebCall>> {
        self.shared.log.lock().unwrap()
    }
}

impl Drop for ScriptedWeb {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    stopped: oneshot::Receiver<()>,
) {
    let app = Router::new()
        .route("/search", post(search))
        .fallback(other)
        .with_state(shared);
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async {
        let _ = stopped.await;
    })
    .await
    .expect("scripted web server");
}

fn record(
    shared: &Shared,
    path: &str,
    peer: SocketAddr,
    headers: &HeaderMap,
    body: &[u8],
) -> Value {
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    shared.log.lock().unwrap().push(WebCall {
        path: path.to_owned(),
        body: body.clone(),
        authorization,
        at: Instant::now(),
        peer,
    });
    body
}

async fn other(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    record(&shared, uri.path(), peer, &headers, &body);
    (
        StatusCode::NOT_FOUND,
        format!("no route for {}", uri.path()),
    )
        .into_response()
}

async fn search(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (request, reply) = {
        // Pick under the script lock so the reply order matches the recorded order.
        let mut script = shared.script.lock().unwrap();
        let request = record(&shared, "/search", peer, &headers, &body);
        let reply = match script.len() {
            0 => WebReply::empty(),
            1 => script[0].clone(),
            _ => script.pop_front().expect("non-empty"),
        };
        (request, reply)
    };
    respond(reply, &request).await
}

async fn respond(mut reply: WebReply, request: &Value) -> Response {
    let reply = loop {
        reply = match reply {
            WebReply::Delay(delay, inner) => {
                tokio::time::sleep(delay).await;
                *inner
            }
            WebReply::With(f) => f(request),
            other => break other,
        };
    };
    match reply {
        WebReply::Results(results) => axum::Json(json!({
            "query": request["query"],
            "results": results,
            "response_time": 0.01
        }))
        .into_response(),
        WebReply::Body(value) => axum::Json(value).into_response(),
        WebReply::Raw(text) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            text,
        )
            .into_response(),
        WebReply::Status {
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
            response
        }
        WebReply::Delay(..) | WebReply::With(_) => unreachable!("resolved above"),
    }
}
