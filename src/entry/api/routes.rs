//! The run route handlers: a synchronous run (`POST /workflow/run`), an asynchronous one
//! (`POST /workflow/runs`) and a run's status (`GET /workflow/runs/{run_id}`). Each reads its
//! input, makes one call to the run life cycle and shapes what it gets.

use super::input;
use super::refusal::Reply;
use super::respond::respond;
use super::status::{accepted, error_field, json_response, ApiError};
use crate::entry::App;
use crate::rag::{Caller, RunStatus};
use crate::runs::{Submitted, WorkQueue};
use lambda_http::http::StatusCode;
use lambda_http::{Request, RequestExt};

/// `POST /workflow/run`: runs within the invocation's budget.
pub(super) async fn run_sync(
    app: &App,
    queue: Option<&dyn WorkQueue>,
    caller: Caller,
    request: &Request,
) -> Reply {
    let runs = app.runs();
    let budget = runs.budget(request.lambda_context_ref());
    let answer = runs
        .start(caller, input::read(app, request), &budget, queue)
        .await?;
    Ok(respond(answer, runs.clock().now_ms()))
}

/// `POST /workflow/runs`: stores the run and queues it for the worker (501 without a queue).
pub(super) async fn run_async(
    app: &App,
    queue: Option<&dyn WorkQueue>,
    caller: Caller,
    request: &Request,
) -> Reply {
    let submitted = app
        .runs()
        .submit(caller, input::read(app, request), queue)
        .await?;
    Ok(match submitted {
        Submitted::Accepted(run_id) => accepted(&run_id, RunStatus::Running),
        Submitted::Known(response) => json_response(StatusCode::OK, &response),
    })
}

/// `GET /workflow/runs/{run_id}`: the run's status, and its answer once finished.
pub(super) async fn get_run(app: &App, caller: &Caller, run_id: &str) -> Reply {
    check_run_id(run_id)?;
    let response = app.runs().status(Some(caller), run_id).await?;
    Ok(json_response(StatusCode::OK, &response))
}

/// A `run_id` path parameter as runs are named (400 otherwise).
pub(crate) fn check_run_id(run_id: &str) -> Result<(), ApiError> {
    if run_id.is_empty()
        || run_id.len() > 128
        || !run_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(error_field(
            StatusCode::BAD_REQUEST,
            "run_id",
            "must be 1..=128 characters of letters, digits, '-' or '_': use the run_id a \
             POST /workflow/run or POST /workflow/runs answered with",
        ));
    }
    Ok(())
}
