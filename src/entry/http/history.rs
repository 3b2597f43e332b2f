//! A caller's history: `GET /workflow/runs/{run_id}/steps?after=N&limit=M` (a run's
//! checkpointed steps, a page at a time) and `GET /workflow/runs?status=&limit=&cursor=` (the
//! caller's runs, newest first, through the store's owner index: never a scan).

use super::api::Api;
use super::routes::check_run_id;
use super::status::{engine_error, error_field, json_response, ApiError, Reply};
use crate::engine::EngineError;
use crate::rag::{Caller, RunResponse};
use crate::runs::{parse_status, runs_owner, RunSummary, StepPage, MAX_STEPS_PER_PAGE};
use crate::store::decode_cursor;
use lambda_http::http::StatusCode;
use lambda_http::{Request, RequestExt};
use serde_json::json;

/// Runs one page of the list holds at most, and by default.
const MAX_RUNS_PER_PAGE: u32 = 100;
const DEFAULT_RUNS_PER_PAGE: u32 = 20;

/// `GET /workflow/runs/{run_id}/steps`: the steps after `after` (default 0), at most `limit`
/// (1..=100, default 100).
pub(super) async fn steps(api: Api<'_>, caller: &Caller, run_id: &str, request: &Request) -> Reply {
    let after = number(request, "after", 0, u32::MAX, 0)?;
    let limit = number(request, "limit", 1, MAX_STEPS_PER_PAGE, MAX_STEPS_PER_PAGE)?;
    let run = api
        .runs
        .workflow()
        .for_caller(caller)
        .status(run_id)
        .await
        .map_err(|e| engine_error(api.runs.clock(), e))?;
    Ok(json_response(
        StatusCode::OK,
        &StepPage::of(&run, after, limit),
    ))
}

/// The caller's run `run_id`, or the error answer (400 for a bad id, 404 for none).
pub(crate) async fn read_run(
    api: Api<'_>,
    caller: &Caller,
    run_id: &str,
) -> Result<RunResponse, ApiError> {
    check_run_id(run_id)?;
    api.runs
        .workflow()
        .for_caller(caller)
        .status(run_id)
        .await
        .map_err(|e| engine_error(api.runs.clock(), e))
}

/// An invalid header or field answer (for handlers outside this module).
pub(crate) fn bad_header(code: StatusCode, name: &str, message: &str) -> ApiError {
    error_field(code, name, message)
}

/// `GET /workflow/runs`: the caller's runs, newest first, `limit` (1..=100, default 20) at a
/// time, only those with `status` when given, after `cursor` (the `next_cursor` of the page
/// before).
pub(super) async fn list(api: Api<'_>, caller: &Caller, request: &Request) -> Reply {
    let query = request.query_string_parameters();
    let status = match query.first("status").filter(|s| !s.is_empty()) {
        None => None,
        Some(text) => Some(parse_status(text).ok_or_else(|| {
            error_field(
                StatusCode::BAD_REQUEST,
                "status",
                &format!(
                    "unknown status {text:?}: use running, completed, best_effort, suspended, \
                     failed or cancelled"
                ),
            )
        })?),
    };
    let limit = number(
        request,
        "limit",
        1,
        MAX_RUNS_PER_PAGE,
        DEFAULT_RUNS_PER_PAGE,
    )?;
    let cursor = query.first("cursor").filter(|c| !c.is_empty());
    if cursor.is_some_and(|c| decode_cursor(c).is_none()) {
        return Err(error_field(
            StatusCode::BAD_REQUEST,
            "cursor",
            "is not a cursor this API gave out: pass the next_cursor of the previous page, or \
             none for the first page",
        ));
    }
    let page = api
        .runs
        .store()
        .list_owned(
            &runs_owner(caller),
            status.map(|s| s.as_str()),
            limit as usize,
            cursor,
        )
        .await
        .map_err(|e| engine_error(api.runs.clock(), EngineError::Store(e)))?;
    let runs: Vec<RunSummary> = page.items.iter().filter_map(RunSummary::of).collect();
    Ok(json_response(
        StatusCode::OK,
        &json!({ "runs": runs, "next_cursor": page.cursor }),
    ))
}

/// The integer query parameter `name` in `min..=max`, `default` when absent (400 otherwise).
fn number(
    request: &Request,
    name: &str,
    min: u32,
    max: u32,
    default: u32,
) -> Result<u32, ApiError> {
    let query = request.query_string_parameters();
    let Some(text) = query.first(name).filter(|t| !t.is_empty()) else {
        return Ok(default);
    };
    text.parse::<u32>()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| {
            error_field(
                StatusCode::BAD_REQUEST,
                name,
                &format!("must be an integer between {min} and {max}, got {text:?}"),
            )
        })
}
