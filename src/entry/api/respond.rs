//! The HTTP answer to a run: what `POST /workflow/run` (and the stream function's last event)
//! answers once the run life cycle ran it. A finished run is `200` with its body (a failed one
//! `503` when retrying may help, `502` when it will not); a run going on elsewhere, or
//! suspended with its continuation queued, is `202` with where to read it. Each answer also
//! writes the run's metrics line (EMF).

use super::refusal::queue_error;
use super::status::{accepted, failed_run_status, json_response};
use crate::entry::metrics;
use crate::error::{Classify, ErrorClass};
use crate::rag::RunStatus;
use crate::runs::{Answer, Continuation, Ran};
use lambda_http::http::StatusCode;
use lambda_http::{Body, Response};

/// The answer to a run, at `now_ms`.
pub(crate) fn respond(answer: Answer, now_ms: u64) -> Response<Body> {
    let Ran {
        response,
        continuation,
        event_unsent: _,
    } = match answer {
        Answer::Busy(run_id) => return accepted(&run_id, RunStatus::Running),
        Answer::Ran(ran) => *ran,
    };
    metrics::emit_run(&response, now_ms);
    match response.status {
        // A waiting run's answer says what it asks (`interrupt`).
        RunStatus::Completed
        | RunStatus::BestEffort
        | RunStatus::Cancelled
        | RunStatus::Waiting => json_response(StatusCode::OK, &response),
        RunStatus::Running => accepted(&response.run_id, RunStatus::Running),
        RunStatus::Suspended => match continuation {
            Some(Continuation::Queued) => accepted(&response.run_id, RunStatus::Suspended),
            Some(Continuation::Failed(e)) => queue_error(e.class()).into(),
            Some(Continuation::NoQueue) | None => json_response(StatusCode::OK, &response),
        },
        RunStatus::Failed => {
            let class = response
                .error
                .as_ref()
                .map(|e| e.class)
                .unwrap_or(ErrorClass::Permanent);
            json_response(failed_run_status(class), &response)
        }
    }
}
