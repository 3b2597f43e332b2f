//! `POST /workflow/runs/{run_id}/cancel`: stops a queued, suspended or running run of the
//! caller (see `runs/cancel.rs` for how a running invocation learns of it).
//!
//! | the run | answer |
//! |---|---|
//! | queued, suspended or running | `200`, the run with status `cancelled` and its answer so far |
//! | already cancelled | `200`, the same (a repeated cancel changes nothing) |
//! | already ended (`completed`, `best_effort`, `failed`) | `409 run_finished`, with its status |
//! | another caller's, or none | `404` |

use super::refusal::Reply;
use super::routes::check_run_id;
use super::status::{json_response, ApiError};
use crate::entry::App;
use crate::rag::Caller;
use crate::runs::Cancel;
use lambda_http::http::StatusCode;
use serde_json::json;

/// Cancels the caller's run `run_id`.
pub(super) async fn cancel(app: &App, caller: &Caller, run_id: &str) -> Reply {
    check_run_id(run_id)?;
    match app.runs().cancel(Some(caller), run_id).await? {
        Cancel::Cancelled(response) | Cancel::AlreadyCancelled(response) => {
            Ok(json_response(StatusCode::OK, &response))
        }
        Cancel::Finished(response) => Err(ApiError::with_body(
            StatusCode::CONFLICT,
            json!({
                "error": "run_finished",
                "status": response.status,
                "message": format!(
                    "run {run_id} already ended ({}) and cannot be cancelled; read its answer \
                     with GET /workflow/runs/{run_id}",
                    response.status.as_str()
                ),
            }),
        )
        .into()),
    }
}
