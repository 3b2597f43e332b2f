//! Admission of a new run under the caller's active-run limit (`MAX_ACTIVE_RUNS_PER_CALLER`):
//! past it, 429 with `Retry-After`, the ids of the caller's unfinished runs, and when a slot
//! frees up at the latest.

use super::api::Api;
use super::status::{engine_error, ApiError};
use crate::engine::utc_seconds;
use crate::entry::messages;
use crate::runs::active::{ActiveRuns, Admission};
use crate::rag::Caller;
use lambda_http::http::header::{HeaderValue, RETRY_AFTER};
use lambda_http::http::StatusCode;
use serde_json::json;

/// Takes a slot of the caller's active-run limit for `run_id`, or answers 429.
pub(super) async fn admit(api: Api<'_>, caller: &Caller, run_id: &str) -> Result<(), ApiError> {
    let Some(limit) = api.limits.max_active_runs_per_caller else {
        return Ok(());
    };
    let clock = api.runs.clock();
    let now_ms = clock.now_ms();
    let admission = ActiveRuns::new(api.runs.store(), limit)
        .admit(caller, run_id, now_ms)
        .await
        .map_err(|e| engine_error(clock, e))?;
    let Admission::Full {
        limit,
        active,
        retry_at_ms,
        free_by_ms,
    } = admission
    else {
        return Ok(());
    };
    let retry_after = messages::wait_secs(retry_at_ms, now_ms);
    tracing::info!(
        caller = caller.kind(),
        limit,
        retry_after,
        "active-run limit reached"
    );
    let message = format!(
        "you have {} unfinished runs and the limit is {limit} per caller \
         (MAX_ACTIVE_RUNS_PER_CALLER): retry in {retry_after} s, or as soon as one of them \
         finishes (GET /workflow/runs/{{run_id}}); a run that never finishes stops counting by \
         {} at the latest",
        active.len(),
        messages::until(free_by_ms, now_ms),
    );
    let body = json!({
        "error": "too_many_active_runs",
        "message": message,
        "limit": limit,
        "active_run_ids": active,
        "retry_after_seconds": retry_after,
        "retry_at": utc_seconds(now_ms + retry_after * 1_000),
    });
    Err(ApiError::with_body(StatusCode::TOO_MANY_REQUESTS, body)
        .with_header(RETRY_AFTER, HeaderValue::from(retry_after)))
}
