//! The API Gateway HTTP API (payload v2) / function URL handler. No workflow or run logic here:
//! each handler reads its input, makes one call to the run life cycle ([`crate::runs::Runs`])
//! and shapes what it gets. The contract is `openapi.yaml`. One concept per file:
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the routing table |
//! | `input.rs` | reading a run request: body, JSON, `Idempotency-Key` |
//! | `routes.rs` | `POST /workflow/run`, `POST /workflow/runs`, `GET /workflow/runs/{run_id}` |
//! | `cancel.rs` | cancelling a run |
//! | `fork.rs` | forking a run from one of its steps |
//! | `resume.rs` | answering a run that waits for a person |
//! | `history.rs` | a run's steps, and the caller's runs |
//! | `threads.rs` | `/threads` |
//! | `respond.rs` | the answer to a run (200, 202, 502/503), and its metrics line |
//! | `refusal.rs` | the one mapping of refusals to status codes |
//! | `status.rs` | how answers are shaped: JSON bodies, error bodies, 202 |

mod cancel;
mod fork;
mod history;
pub(crate) mod input;
mod refusal;
mod respond;
mod resume;
mod routes;
mod status;
mod threads;

pub(crate) use refusal::answer as refused;
pub(crate) use respond::respond;
pub(crate) use routes::check_run_id;
pub use status::body_json;
pub(crate) use status::{error_field, ApiError};

use super::app::App;
use super::caller;
use crate::runs::WorkQueue;
use lambda_http::http::header::{HeaderValue, ALLOW};
use lambda_http::http::{Method, StatusCode};
use lambda_http::{Body, Request, RequestExt, Response};
use percent_encoding::percent_decode_str;
use refusal::Rejection;
use tracing::Instrument;

/// The routes, for the answer to a request that matches none.
const ROUTES: &str =
    "POST /workflow/run, POST and GET /workflow/runs, GET /workflow/runs/{run_id}, POST \
     /workflow/runs/{run_id}/cancel, POST /workflow/runs/{run_id}/fork, POST /workflow/runs/{run_id}/resume, GET /workflow/runs/{run_id}/steps, GET /threads and GET or \
     DELETE /threads/{thread_id} (see openapi.yaml)";

/// Handles one HTTP request. Never fails: every error becomes a JSON response. Its spans
/// are exported (when export is on) before it returns.
pub async fn handle(app: &App, queue: Option<&dyn WorkQueue>, request: Request) -> Response<Body> {
    let span = request_span(&request);
    let response = route(app, queue, request).instrument(span).await;
    crate::otlp::flush().await;
    response
}

/// The root span of a request: a child of the caller's `traceparent` header, else of the
/// invocation's X-Ray trace (Lambda active tracing).
fn request_span(request: &Request) -> tracing::Span {
    let traceparent = request
        .headers()
        .get(crate::otlp::TRACEPARENT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| crate::otlp::invocation_traceparent(request.lambda_context_ref()))
        .unwrap_or_default();
    tracing::info_span!(
        "request",
        otel.name = %format_args!("{} {}", request.method(), request.uri().path()),
        traceparent
    )
}

async fn route(app: &App, queue: Option<&dyn WorkQueue>, request: Request) -> Response<Body> {
    let caller = caller::of(&request);
    let method = request.method().clone();
    let path = request.uri().path().trim_end_matches('/').to_owned();
    // The path arrives as the client encoded it: `/threads/team%3Adurian` is the thread
    // `team:durian`. Each segment is decoded after the split, so `%2F` never adds a segment.
    let decoded: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let segments: Vec<&str> = decoded.iter().map(String::as_str).collect();
    let result = match (&method, segments.as_slice()) {
        (&Method::POST, ["workflow", "run"]) => {
            routes::run_sync(app, queue, caller, &request).await
        }
        (&Method::POST, ["workflow", "runs"]) => {
            routes::run_async(app, queue, caller, &request).await
        }
        (&Method::GET, ["workflow", "runs"]) => history::list(app, &caller, &request).await,
        (&Method::GET, ["workflow", "runs", run_id]) => routes::get_run(app, &caller, run_id).await,
        (&Method::POST, ["workflow", "runs", run_id, "cancel"]) => {
            cancel::cancel(app, &caller, run_id).await
        }
        (&Method::POST, ["workflow", "runs", run_id, "fork"]) => {
            fork::fork(app, queue, &caller, run_id, &request).await
        }
        (&Method::POST, ["workflow", "runs", run_id, "resume"]) => {
            resume::resume(app, queue, &caller, run_id, &request).await
        }
        (&Method::GET, ["workflow", "runs", run_id, "steps"]) => {
            history::steps(app, &caller, run_id, &request).await
        }
        (_, ["workflow", "run"]) => Err(method_not_allowed(&method, &path, "POST")),
        (_, ["workflow", "runs"]) => Err(method_not_allowed(&method, &path, "GET, POST")),
        (_, ["workflow", "runs", _]) | (_, ["workflow", "runs", _, "steps"]) => {
            Err(method_not_allowed(&method, &path, "GET"))
        }
        (_, ["workflow", "runs", _, "cancel" | "fork" | "resume"]) => {
            Err(method_not_allowed(&method, &path, "POST"))
        }
        (&Method::GET, ["threads"]) => threads::list(app, &caller, &request).await,
        (&Method::GET, ["threads", id]) => threads::show(app, &caller, id, &request).await,
        (&Method::DELETE, ["threads", id]) => threads::delete(app, &caller, id).await,
        (_, ["threads"]) => Err(method_not_allowed(&method, &path, "GET")),
        (_, ["threads", _]) => Err(method_not_allowed(&method, &path, "GET, DELETE")),
        _ => Err(status::error(
            StatusCode::NOT_FOUND,
            "not_found",
            &format!("no route for {path}; the routes are {ROUTES}"),
        )
        .into()),
    };
    result.unwrap_or_else(|rejection| rejection.into_response(app.runs().clock().now_ms()))
}

fn method_not_allowed(method: &Method, path: &str, allowed: &'static str) -> Rejection {
    status::error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        &format!("{method} is not accepted on {path}: use {allowed} (the routes are {ROUTES})"),
    )
    .with_header(ALLOW, HeaderValue::from_static(allowed))
    .into()
}
