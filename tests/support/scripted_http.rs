//! What the scripted loopback servers ([`super::llm_server`], [`super::web_server`]) share.
//!
//! A server is a [`Scripted`] handle over a script (anything that [`Replies`]): `POST` to its
//! one route is answered with the script's next [`Reply`], any other request with a 404. Every
//! request is recorded as a [`Call`] before it is answered, and the reply is picked under the
//! same lock, so the reply order matches the recorded order. The server listens on
//! `127.0.0.1:0` and stops when the handle is dropped.
//!
//! [`Reply`] is generic over the success payload `P`, which the server wraps in its own
//! response envelope ([`Payload::respond`]); the other variants are the same everywhere.

use axum::body::to_bytes;
use axum::extract::{ConnectInfo, FromRequest, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use serde_json::Value;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// A server's success payload: what [`Reply::Ok`] carries.
pub trait Payload: Clone + std::fmt::Debug + Send + Sync + 'static {
    /// The body of the HTTP error built by [`Reply::status`].
    fn error_body(status: u16) -> String;
    /// The 200 response carrying this payload, for `request`, the `n`-th request received.
    fn respond(self, request: &Value, n: usize) -> Response;
}

/// A script: picks the reply to each request to the server's route.
pub trait Replies: Send + 'static {
    /// The success payload of the replies.
    type Payload: Payload;
    /// The reply to `call`, picked as it is recorded.
    fn next(&mut self, call: &Call) -> Reply<Self::Payload>;
}

/// What a scripted server does with one request.
#[derive(Clone)]
pub enum Reply<P> {
    /// 200 with the payload in the server's response envelope.
    Ok(P),
    /// 200 with this whole JSON body instead of the envelope.
    Body(Value),
    /// 200 with this exact text as the whole body, typed JSON (e.g. malformed JSON).
    Text(String),
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
    Delay(Duration, Box<Reply<P>>),
    /// Decide from the request body.
    With(Decide<P>),
    /// Wait until the [`Hold`] is released, then reply.
    Held(Hold, Box<Reply<P>>),
}

/// A gate a test holds replies at ([`Reply::held`]): each [`Hold::release`] lets one held
/// reply through, so a test can act while a call is in flight (its arrival is recorded before
/// it waits).
#[derive(Clone)]
pub struct Hold(Arc<tokio::sync::Semaphore>);

impl Default for Hold {
    fn default() -> Self {
        Self::new()
    }
}

impl Hold {
    /// A closed gate.
    pub fn new() -> Self {
        Self(Arc::new(tokio::sync::Semaphore::new(0)))
    }

    /// Lets one held reply through (or the next one to arrive).
    pub fn release(&self) {
        self.0.add_permits(1);
    }

    async fn wait(&self) {
        if let Ok(permit) = self.0.acquire().await {
            permit.forget();
        }
    }
}

/// The closure of [`Reply::With`].
pub type Decide<P> = Arc<dyn Fn(&Value) -> Reply<P> + Send + Sync>;

impl<P: Payload> Reply<P> {
    /// An HTTP error with the server's error body.
    pub fn status(status: u16) -> Self {
        Reply::Status {
            status,
            retry_after: None,
            body: P::error_body(status),
        }
    }
    /// Adds a `Retry-After` header to a [`Reply::status`].
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
    /// Replaces the body of a [`Reply::status`].
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
    /// The same reply once `hold` is released.
    pub fn held(self, hold: &Hold) -> Self {
        Reply::Held(hold.clone(), Box::new(self))
    }
    /// A reply computed from the request body.
    pub fn from_fn(f: impl Fn(&Value) -> Self + Send + Sync + 'static) -> Self {
        Reply::With(Arc::new(f))
    }

    /// Waits out delays, asks `With` closures, then answers `request`, the `n`-th received.
    async fn respond(mut self, request: &Value, n: usize) -> Response {
        let reply = loop {
            self = match self {
                Reply::Delay(delay, inner) => {
                    tokio::time::sleep(delay).await;
                    *inner
                }
                Reply::With(f) => f(request),
                Reply::Held(hold, inner) => {
                    hold.wait().await;
                    *inner
                }
                other => break other,
            };
        };
        let json = [(header::CONTENT_TYPE, "application/json")];
        match reply {
            Reply::Ok(payload) => payload.respond(request, n),
            Reply::Body(value) => axum::Json(value).into_response(),
            Reply::Text(text) => (StatusCode::OK, json, text).into_response(),
            Reply::Status {
                status,
                retry_after,
                body,
            } => {
                let status = StatusCode::from_u16(status).expect("valid status code");
                let mut response = (status, json, body).into_response();
                if let Some(value) = retry_after {
                    let value = value.parse().expect("header value");
                    response.headers_mut().insert(header::RETRY_AFTER, value);
                }
                response
            }
            Reply::Delay(..) | Reply::With(_) | Reply::Held(..) => {
                unreachable!("resolved above")
            }
        }
    }
}

impl<P: std::fmt::Debug> std::fmt::Debug for Reply<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::Ok(payload) => write!(f, "Ok({payload:?})"),
            Reply::Body(v) => write!(f, "Body({v})"),
            Reply::Text(s) => write!(f, "Text({s:?})"),
            Reply::Status { status, .. } => write!(f, "Status({status})"),
            Reply::Delay(d, r) => write!(f, "Delay({d:?}, {r:?})"),
            Reply::With(_) => f.write_str("With(..)"),
            Reply::Held(_, r) => write!(f, "Held({r:?})"),
        }
    }
}

/// The next reply of `queue`: replies are served in order and the last one repeats.
/// `None` when the queue is empty.
pub fn next_in<P: Clone>(queue: &mut VecDeque<Reply<P>>) -> Option<Reply<P>> {
    if queue.len() > 1 {
        queue.pop_front()
    } else {
        queue.front().cloned()
    }
}

/// One request a scripted server received.
#[derive(Debug, Clone)]
pub struct Call {
    /// Request path, e.g. `/search`.
    pub path: String,
    /// The JSON body (`Value::Null` when it was not JSON).
    pub body: Value,
    /// The `Authorization` header, if sent.
    pub authorization: Option<String>,
    /// When it arrived (its body read).
    pub at: Instant,
    /// The client's address: one port per pooled connection.
    pub peer: SocketAddr,
}

impl<S: Send + Sync> FromRequest<S> for Call {
    type Rejection = Infallible;

    async fn from_request(request: Request, _: &S) -> Result<Self, Infallible> {
        let (parts, body) = request.into_parts();
        let body = to_bytes(body, usize::MAX).await.unwrap_or_default();
        let ConnectInfo(peer) = *parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .expect("served with connect info");
        Ok(Call {
            path: parts.uri.path().to_owned(),
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            authorization: parts
                .headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            at: Instant::now(),
            peer,
        })
    }
}

/// The script and the requests received so far, under one lock.
struct Shared<S> {
    script: S,
    log: Vec<Call>,
}

type Locked<S> = Arc<Mutex<Shared<S>>>;

/// Under one lock, picks with the script and records `call`: returns the pick and the number
/// of calls recorded so far.
fn record<S, R>(
    shared: &Locked<S>,
    call: Call,
    pick: impl FnOnce(&mut S, &Call) -> R,
) -> (R, usize) {
    let mut shared = shared.lock().unwrap();
    let picked = pick(&mut shared.script, &call);
    shared.log.push(call);
    (picked, shared.log.len())
}

async fn answer<S: Replies>(State(shared): State<Locked<S>>, call: Call) -> Response {
    let request = call.body.clone();
    let (reply, n) = record(&shared, call, S::next);
    reply.respond(&request, n).await
}

async fn unrouted<S: Replies>(State(shared): State<Locked<S>>, call: Call) -> Response {
    let text = format!("no route for {}", call.path);
    record(&shared, call, |_, _| ());
    (StatusCode::NOT_FOUND, text).into_response()
}

/// A running scripted server; stops on drop.
pub struct Scripted<S> {
    addr: SocketAddr,
    shared: Locked<S>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl<S: Replies> Scripted<S> {
    /// Binds `127.0.0.1:0` on the current runtime and answers `POST route` from `script`.
    pub async fn serve(route: &str, script: S) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let (shutdown, stopped) = oneshot::channel();
        let shared = Self::shared(script);
        tokio::spawn(run(listener, router(route, shared.clone()), stopped));
        Self {
            addr,
            shared,
            shutdown: Some(shutdown),
            thread: None,
        }
    }

    /// Like [`Scripted::serve`], but served by a thread with its own runtime, for tests that
    /// block (a CLI child process, a synchronous test).
    pub fn serve_in_thread(route: &str, script: S) -> Self {
        let (shutdown, stopped) = oneshot::channel();
        let (bound, addr) = std::sync::mpsc::channel();
        let shared = Self::shared(script);
        let app = router(route, shared.clone());
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind loopback");
                bound.send(listener.local_addr().expect("local addr")).ok();
                run(listener, app, stopped).await;
            });
        });
        Self {
            addr: addr.recv().expect("server thread started"),
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    fn shared(script: S) -> Locked<S> {
        Arc::new(Mutex::new(Shared {
            script,
            log: Vec::new(),
        }))
    }
}

impl<S> Scripted<S> {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Changes the script while the server runs.
    pub fn edit_script(&self, edit: impl FnOnce(&mut S)) {
        edit(&mut self.shared.lock().unwrap().script);
    }

    /// Everything recorded (all paths), in arrival order.
    pub fn recorded(&self) -> Vec<Call> {
        self.shared.lock().unwrap().log.clone()
    }

    /// All requests received.
    pub fn total_calls(&self) -> usize {
        self.shared.lock().unwrap().log.len()
    }

    /// Request bodies in arrival order.
    pub fn requests(&self) -> Vec<Value> {
        self.recorded().into_iter().map(|c| c.body).collect()
    }

    /// The last request received, if any.
    pub fn last(&self) -> Option<Call> {
        self.shared.lock().unwrap().log.last().cloned()
    }

    /// Forgets the recorded requests (the script is kept).
    pub fn clear(&self) {
        self.shared.lock().unwrap().log.clear();
    }
}

impl<S> Drop for Scripted<S> {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn router<S: Replies>(route: &str, shared: Locked<S>) -> Router {
    Router::new()
        .route(route, post(answer::<S>))
        .fallback(unrouted::<S>)
        .with_state(shared)
}

async fn run(listener: TcpListener, app: Router, stopped: oneshot::Receiver<()>) {
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async {
        let _ = stopped.await;
    })
    .await
    .expect("scripted HTTP server");
}
