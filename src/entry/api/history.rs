//! A caller's history: `GET /workflow/runs/{run_id}/steps?after=N&limit=M` (a run's
//! checkpointed steps, a page at a time) and `GET /workflow/runs?status=&limit=&cursor=` (the
//! caller's runs, newest first, through the store's owner index: never a scan).

use super::refusal::Reply;
use super::status::{error_field, json_response, ApiError};
use crate::entry::App;
use crate::rag::Caller;
use crate::runs::{parse_status, MAX_STEPS_PER_PAGE};
use crate::store::decode_cursor;
use lambda_http::http::StatusCode;
use lambda_http::{Request, RequestExt};

/// Runs one page of the list holds at most, and by default.
const MAX_RUNS_PER_PAGE: u32 = 100;
const DEFAULT_RUNS_PER_PAGE: u32 = 20;

/// `GET /workflow/runs/{run_id}/steps`: the steps after `after` (default 0), at most `limit`
/// (1..=100, default 100).
pub(super) async fn steps(app: &App, caller: &Caller, run_id: &str, request: &Request) -> Reply {
    let after = number(request, "after", 0, u32::MAX, 0)?;
    let limit = number(request, "limit", 1, MAX_STEPS_PER_PAGE, MAX_STEPS_PER_PAGE)?;
    let page = app.runs().steps(caller, run_id, after, limit).await?;
    Ok(json_response(StatusCode::OK, &page))
}

/// `GET /workflow/runs`: the caller's runs, newest first, `limit` (1..=100, default 20) at a
/// time, only those with `status` when given, after `cursor` (the `next_cursor` of the page
/// before).
pub(super) async fn list(app: &App, caller: &Caller, request: &Request) -> Reply {
    let query = request.query_string_parameters();
    let status = match query.first("status") {
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
        )
        .into());
    }
    let page = app.runs().list(caller, status, limit, cursor).await?;
    Ok(json_response(StatusCode::OK, &page))
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
    let Some(text) = query.first(name) else {
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
