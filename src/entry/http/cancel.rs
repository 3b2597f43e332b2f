//! `POST /workflow/runs/{run_id}/cancel`: stops a queued, suspended or running run of the
//! caller (see `rag::cancel` for how a running invocation learns of it).
//!
//! | the run | answer |
//! |---|---|
//! | queued, suspended or running | `200`, the run with status `cancelled` and its answer so far |
//! | already cancelled | `200`, the same (a repeated cancel changes nothing) |
//! | already ended (`completed`, `best_effort`, `failed`) | `409 run_finished`, with its status |
//! | another caller's, or none | `404` |

use super::api::Api;
use super::routes::{check_run_id, notify};
use super::status::{engine_error, json_response, ApiError, Reply};
use crate::rag::Caller;
use crate::runs::Cancel;
use lambda_http::http::StatusCode;
use serde_json::json;

/// Cancels the caller's run `run_id`.
pub(super) async fn cancel(api: Api<'_>, caller: &Caller, run_id: &str) -> Reply {
    check_run_id(run_id)?;
    let outcome = api
        .runs
        .workflow()
        .for_caller(caller)
        .cancel(run_id)
        .await
        .map_err(|e| engine_error(api.runs.clock(), e))?;
    match outcome {
        Cancel::Cancelled(response) | Cancel::AlreadyCancelled(response) => {
            notify(api, &response).await;
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
        )),
    }
}
