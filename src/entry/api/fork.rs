//! `POST /workflow/runs/{run_id}/fork`: a new run from a step of the caller's run, run within
//! the invocation's budget and answered like `POST /workflow/run` (see `runs/fork.rs`).
//!
//! | the request | answer |
//! |---|---|
//! | an ended run, a step it can be forked after | the fork's answer (`200`, or as a run) |
//! | a step past the run's end, its last step, or one inside a speculation | `400`, naming `from_step` |
//! | a run still running or suspended | `409 run_not_ended` |
//! | a run of a workflow version this code does not run, or recorded before forks | `409 not_forkable` |
//! | the same `Idempotency-Key` and body again | the fork the first request made, as it stands |
//! | another caller's run, or none | `404` |

use super::refusal::Reply;
use super::respond::respond;
use super::routes::check_run_id;
use crate::entry::App;
use crate::rag::Caller;
use crate::runs::{ForkInput, WorkQueue};
use lambda_http::{Request, RequestExt};

/// Forks the caller's run `run_id` as the body asks.
pub(super) async fn fork(
    app: &App,
    queue: Option<&dyn WorkQueue>,
    caller: &Caller,
    run_id: &str,
    request: &Request,
) -> Reply {
    check_run_id(run_id)?;
    let body = request.body().as_ref();
    let input = super::input::body_of(app, body, ForkInput::from_json);
    let runs = app.runs();
    let budget = runs.budget(request.lambda_context_ref());
    let key = (super::input::idempotency_key(request), body);
    let answer = runs
        .fork(Some(caller), run_id, input, key, &budget, queue)
        .await?;
    Ok(respond(answer, runs.clock().now_ms()))
}
