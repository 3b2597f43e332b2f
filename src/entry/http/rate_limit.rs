//! The per-caller request rate (`MAX_REQUESTS_PER_CALLER_PER_MINUTE`): each run request
//! (`POST /workflow/run`, `POST /workflow/runs`, the stream function's `POST /workflow/run`)
//! is counted in its caller's one-minute window before anything else is done for it; past the
//! limit, 429 with `Retry-After` until the window ends. Reads (`GET /workflow/runs/{run_id}`)
//! are not counted, so polling a run never locks its caller out.

use super::api::Api;
use super::status::{engine_error, ApiError};
use crate::engine::{utc_seconds, EngineError};
use crate::entry::messages;
use crate::rag::Caller;
use crate::store::Window;
use lambda_http::http::header::{HeaderValue, RETRY_AFTER};
use lambda_http::http::StatusCode;
use serde_json::json;

/// Counts this request of `caller`, or answers 429 when its window is full.
pub(super) async fn count(api: Api<'_>, caller: &Caller) -> Result<(), ApiError> {
    let Some(limit) = api.limits.max_requests_per_caller_per_minute else {
        return Ok(());
    };
    let clock = api.runs.clock();
    let now_ms = clock.now_ms();
    let window = Window::at(now_ms);
    let admitted = api
        .runs
        .store()
        .count_request(&caller.digest(), window, limit)
        .await
        .map_err(|e| engine_error(clock, EngineError::Store(e)))?;
    if admitted {
        return Ok(());
    }
    let retry_after = messages::wait_secs(window.ends_at_ms(), now_ms);
    tracing::info!(
        caller = caller.kind(),
        limit,
        retry_after,
        "request rate limit reached"
    );
    let message = format!(
        "you reached the limit of {limit} run requests per caller and minute \
         (MAX_REQUESTS_PER_CALLER_PER_MINUTE): retry in {retry_after} s, when this minute ends; \
         reading a run (GET /workflow/runs/{{run_id}}) is not limited"
    );
    let body = json!({
        "error": "too_many_requests",
        "message": message,
        "limit": limit,
        "retry_after_seconds": retry_after,
        "retry_at": utc_seconds(window.ends_at_ms()),
    });
    Err(ApiError::with_body(StatusCode::TOO_MANY_REQUESTS, body)
        .with_header(RETRY_AFTER, HeaderValue::from(retry_after)))
}
