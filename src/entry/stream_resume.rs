//! `GET /workflow/runs/{run_id}/events` on the streaming function: a stream picked back up
//! after a dropped connection. With `Last-Event-ID` (the id of the last event the client got;
//! none: from the start) it replays the checkpointed `step` events after that step, then, while
//! the run is unfinished, follows it by polling its checkpoint every [`POLL`] (bounded by the
//! invocation's budget: past it the stream just ends, and the client reconnects with the last
//! id it got), and ends with `final`, `suspended` or `cancelled`. Tokens are live only: a
//! resumed stream carries no `token` or `discarded` events.

use super::api::{self, check_run_id, error_field, ApiError};
use super::sse::{buffered, event_stream, last_step_seen, send, sse, EventIds};
use super::{caller, App};
use crate::rag::{Caller, RunResponse, RunStatus};
use crate::runs::steps_after;
use lambda_http::http::StatusCode;
use lambda_http::{Request, RequestExt, Response};
use lambda_runtime::streaming::{channel, Body};
use serde_json::json;
use std::time::Duration;

/// How often an unfinished run's checkpoint is read again.
pub(crate) const POLL: Duration = Duration::from_millis(250);

/// Streams the events of `run_id` after the request's `Last-Event-ID`.
pub(crate) async fn events(app: &'static App, request: Request, run_id: String) -> Response<Body> {
    let caller = caller::of(&request);
    let after = match last_event_id(&request) {
        Ok(after) => after,
        Err(e) => return buffered(e.into()),
    };
    // A bad id, or a run this caller cannot read, answers before the stream starts.
    let run = match read_run(app, &caller, &run_id).await {
        Ok(run) => run,
        Err(answer) => return buffered(answer),
    };
    let deadline_ms = app.runs().budget(request.lambda_context_ref()).deadline_ms;
    let (mut sender, body) = channel();
    tokio::spawn(async move {
        let clock = app.runs().clock();
        let mut seen = after;
        let mut run = run;
        loop {
            for (number, event) in steps_after(&run, seen) {
                send(
                    &mut sender,
                    sse(&number.to_string(), event.name(), &event.data()),
                )
                .await;
                seen = number;
            }
            if let Some(frame) = last_frame(&run, seen) {
                send(&mut sender, frame).await;
                return;
            }
            if clock.now_ms().saturating_add(POLL.as_millis() as u64) >= deadline_ms {
                tracing::info!(
                    run_id = run.run_id,
                    "stream budget used up; the client resumes"
                );
                return;
            }
            tokio::time::sleep(POLL).await;
            run = match read_run(app, &caller, &run.run_id).await {
                Ok(run) => run,
                Err(answer) => {
                    let status = answer.status();
                    tracing::warn!(run_id = run.run_id, %status, "could not follow the run");
                    return;
                }
            };
        }
    });
    event_stream(body, &run_id)
}

/// The caller's run `run_id`, or the answer that refuses it (400 for a bad id, 404 for none).
async fn read_run(
    app: &App,
    caller: &Caller,
    run_id: &str,
) -> Result<RunResponse, Response<lambda_http::Body>> {
    check_run_id(run_id).map_err(Response::from)?;
    let runs = app.runs();
    runs.status(Some(caller), run_id)
        .await
        .map_err(|refusal| api::refused(refusal, runs.clock().now_ms()).into())
}

/// The last event for a run that will not change in this stream (none while it runs): the
/// same bodies `POST /workflow/run` streams.
fn last_frame(run: &RunResponse, seen: u32) -> Option<String> {
    let id = EventIds::after(seen).last();
    let body = serde_json::to_value(run).unwrap_or_default();
    match run.status {
        RunStatus::Running => None,
        RunStatus::Suspended => Some(sse(
            &id,
            "suspended",
            &json!({
                "run_id": run.run_id,
                "status": run.status,
                "status_url": format!("/workflow/runs/{}", run.run_id),
            }),
        )),
        RunStatus::Cancelled => Some(sse(&id, "cancelled", &body)),
        RunStatus::Waiting => Some(sse(&id, "interrupt", &body)),
        RunStatus::Completed | RunStatus::BestEffort | RunStatus::Failed => {
            Some(sse(&id, "final", &body))
        }
    }
}

/// The step number of the request's `Last-Event-ID` (0 without one; 400 for one this API
/// never sent).
fn last_event_id(request: &Request) -> Result<u32, ApiError> {
    let Some(value) = request.headers().get("last-event-id") else {
        return Ok(0);
    };
    value.to_str().ok().and_then(last_step_seen).ok_or_else(|| {
        error_field(
            StatusCode::BAD_REQUEST,
            "Last-Event-ID",
            "is not an event id this API sent (`3`, `3.17` or `3.end`): send the id of \
                 the last event received, or none to start from the first step",
        )
    })
}
