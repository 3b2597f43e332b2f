//! The API Gateway HTTP API (payload v2) / function URL handler. No workflow logic here; the
//! contract is `openapi.yaml`. One concept per file:
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | the routing table |
//! | `api.rs` | what the route handlers are given (`Api`) |
//! | `limits.rs` | what the API admits (`HttpLimits`) |
//! | `routes.rs` | one handler per route, and the shaping of a run's answer |
//! | `idempotency.rs` | `Idempotency-Key`: a repeated request gets the same run |
//! | `admission.rs` | the per-caller active-run limit (429) |
//! | `cancel.rs` | cancelling a run |
//! | `history.rs` | a run's steps, and the caller's runs |
//! | `rate_limit.rs` | the per-caller request rate (429) |
//! | `status.rs` | error answers, and the mapping of engine and queue errors to status codes |
//! | `threads.rs` | conversation threads: a turn's start (409 when busy) and `/threads` |

mod admission;
mod api;
mod cancel;
mod history;
mod idempotency;
pub(crate) mod limits;
mod rate_limit;
mod routes;
mod status;
mod threads;

pub(crate) use api::Api;
pub(crate) use history::{bad_header, read_run};
pub(crate) use routes::{prepare, run_claimed, Claimed};
pub use status::body_json;
pub(crate) use status::ApiError;

use super::app::App;
use super::caller;
use crate::runs::WorkQueue;
use lambda_http::http::header::{HeaderValue, ALLOW};
use lambda_http::http::{Method, StatusCode};
use lambda_http::{Body, Request, RequestExt, Response};
use tracing::Instrument;

/// The routes, for the answer to a request that matches none.
const ROUTES: &str =
    "POST /workflow/run, POST and GET /workflow/runs, GET /workflow/runs/{run_id}, POST \
     /workflow/runs/{run_id}/cancel, GET /workflow/runs/{run_id}/steps, GET /threads and GET or \
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
    let api = Api::new(app, queue);
    let caller = caller::of(&request);
    let method = request.method().clone();
    let path = request.uri().path().trim_end_matches('/').to_owned();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let result = match (&method, segments.as_slice()) {
        (&Method::POST, ["workflow", "run"]) => routes::run_sync(api, caller, &request).await,
        (&Method::POST, ["workflow", "runs"]) => routes::run_async(api, caller, &request).await,
        (&Method::GET, ["workflow", "runs"]) => history::list(api, &caller, &request).await,
        (&Method::GET, ["workflow", "runs", run_id]) => routes::get_run(api, &caller, run_id).await,
        (&Method::POST, ["workflow", "runs", run_id, "cancel"]) => {
            cancel::cancel(api, &caller, run_id).await
        }
        (&Method::GET, ["workflow", "runs", run_id, "steps"]) => {
            history::steps(api, &caller, run_id, &request).await
        }
        (_, ["workflow", "run"]) => Err(method_not_allowed(&method, &path, "POST")),
        (_, ["workflow", "runs"]) => Err(method_not_allowed(&method, &path, "GET, POST")),
        (_, ["workflow", "runs", _]) | (_, ["workflow", "runs", _, "steps"]) => {
            Err(method_not_allowed(&method, &path, "GET"))
        }
        (_, ["workflow", "runs", _, "cancel"]) => Err(method_not_allowed(&method, &path, "POST")),
        (&Method::GET, ["threads"]) => threads::list(api, &caller, &request).await,
        (&Method::GET, ["threads", id]) => threads::show(api, &caller, id, &request).await,
        (&Method::DELETE, ["threads", id]) => threads::delete(api, &caller, id).await,
        (_, ["threads"]) => Err(method_not_allowed(&method, &path, "GET")),
        (_, ["threads", _]) => Err(method_not_allowed(&method, &path, "GET, DELETE")),
        _ => Err(status::error(
            StatusCode::NOT_FOUND,
            "not_found",
            &format!("no route for {path}; the routes are {ROUTES}"),
        )),
    };
    result.unwrap_or_else(Response::from)
}

fn method_not_allowed(method: &Method, path: &str, allowed: &'static str) -> ApiError {
    status::error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        &format!("{method} is not accepted on {path}: use {allowed} (the routes are {ROUTES})"),
    )
    .with_header(ALLOW, HeaderValue::from_static(allowed))
}
