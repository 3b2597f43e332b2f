//! `POST /workflow/runs/{run_id}/resume`: answers the caller's run that waits for a person
//! (body `{"answer": "…"}` or `{"approve": true|false}`), runs it on within the invocation's
//! budget and answers like `POST /workflow/run` (see `runs/resume.rs`).
//!
//! | the request | answer |
//! |---|---|
//! | a waiting run, an answer that fits what it asks | the run's answer (`200`, or `202` as a run suspended) |
//! | the same `Idempotency-Key` and body again | the run as it stands (`200`); nothing is answered twice |
//! | an answer of the other kind, empty or too long | `400`, naming `answer` or `approve` |
//! | a run that is not waiting | `409 run_not_waiting` |
//! | a wait that ran out | `409 interrupt_timeout` (the run is ended `best_effort`) |
//! | the same `Idempotency-Key` with another body | `422` |
//! | another caller's run, or none | `404` |

use super::input::idempotency_key;
use super::refusal::Reply;
use super::respond::respond;
use super::routes::check_run_id;
use crate::entry::App;
use crate::rag::Caller;
use crate::runs::{reply_from_json, ResumeInput, WorkQueue};
use lambda_http::{Request, RequestExt};

/// Answers the caller's waiting run `run_id` as the body says.
pub(super) async fn resume(
    app: &App,
    queue: Option<&dyn WorkQueue>,
    caller: &Caller,
    run_id: &str,
    request: &Request,
) -> Reply {
    check_run_id(run_id)?;
    let body = request.body().as_ref();
    let reply = super::input::body_of(app, body, reply_from_json);
    let runs = app.runs();
    let budget = runs.budget(request.lambda_context_ref());
    let input = ResumeInput {
        reply,
        key: idempotency_key(request),
        body,
    };
    let answer = runs
        .answer(Some(caller), run_id, input, &budget, queue)
        .await?;
    Ok(respond(answer, runs.clock().now_ms()))
}
