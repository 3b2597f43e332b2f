//! The one place a refusal of the run life cycle becomes an HTTP answer: its status code, a
//! JSON body saying what to do next, and `Retry-After` where waiting helps. Engine, store and
//! queue failures were classified where they happened; store details go to the log, never to
//! the caller. Handlers return [`Reply`] and use `?` on the runs' calls; the router turns a
//! [`Rejection`] into its answer at the top, with the time of the answer.

use super::status::{error, error_field, ApiError};
use crate::clock::utc_seconds;
use crate::engine::{EngineError, RewindError};
use crate::entry::messages::{self, Surface};
use crate::error::{Classify, ErrorClass};
use crate::runs::{ForkRefusal, Invalid, Refusal, ResumeRefusal};
use lambda_http::http::header::{HeaderValue, RETRY_AFTER};
use lambda_http::http::StatusCode;
use lambda_http::{Body, Response};
use serde_json::json;

/// Why a handler did not answer as asked: a refusal of the run life cycle, or an answer shaped
/// by the handler itself (input it could not read, a run that already ended).
#[derive(Debug)]
pub(crate) enum Rejection {
    /// Refused by the run life cycle.
    Refused(Refusal),
    /// Answered here.
    Answer(ApiError),
}

impl From<Refusal> for Rejection {
    fn from(refusal: Refusal) -> Self {
        Rejection::Refused(refusal)
    }
}

impl From<ApiError> for Rejection {
    fn from(answer: ApiError) -> Self {
        Rejection::Answer(answer)
    }
}

impl Rejection {
    /// The answer at `now_ms` (waits are counted from it).
    pub(crate) fn into_response(self, now_ms: u64) -> Response<Body> {
        match self {
            Rejection::Refused(refusal) => answer(refusal, now_ms).into(),
            Rejection::Answer(answer) => answer.into(),
        }
    }
}

/// A handler's answer: a response, or why not.
pub(crate) type Reply = Result<Response<Body>, Rejection>;

/// The answer to `refusal` at `now_ms`.
pub(crate) fn answer(refusal: Refusal, now_ms: u64) -> ApiError {
    match refusal {
        Refusal::RateLimited { limit, retry_at_ms } => {
            let retry_after = messages::wait_secs(retry_at_ms, now_ms);
            let message = format!(
                "you reached the limit of {limit} run requests per caller and minute \
                 (MAX_REQUESTS_PER_CALLER_PER_MINUTE): retry in {retry_after} s, when this \
                 minute ends; reading a run (GET /workflow/runs/{{run_id}}) is not limited"
            );
            let body = json!({
                "error": "too_many_requests",
                "message": message,
                "limit": limit,
                "retry_after_seconds": retry_after,
                "retry_at": utc_seconds(retry_at_ms),
            });
            ApiError::with_body(StatusCode::TOO_MANY_REQUESTS, body)
                .with_header(RETRY_AFTER, HeaderValue::from(retry_after))
        }
        Refusal::Invalid(Invalid::TooLarge { bytes, limit }) => error_field(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body",
            &format!(
                "body is {bytes} bytes; the limit is {limit}: send a shorter body (a question \
                 has at most 2000 characters)"
            ),
        ),
        Refusal::Invalid(Invalid::Field(e)) => {
            error_field(StatusCode::BAD_REQUEST, &e.field, &e.message)
        }
        Refusal::TooManyActive {
            limit,
            active,
            retry_at_ms,
            free_by_ms,
        } => {
            let retry_after = messages::wait_secs(retry_at_ms, now_ms);
            let message = format!(
                "you have {} unfinished runs and the limit is {limit} per caller \
                 (MAX_ACTIVE_RUNS_PER_CALLER): retry in {retry_after} s, or as soon as one of \
                 them finishes (GET /workflow/runs/{{run_id}}); a run that never finishes stops \
                 counting by {} at the latest",
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
            ApiError::with_body(StatusCode::TOO_MANY_REQUESTS, body)
                .with_header(RETRY_AFTER, HeaderValue::from(retry_after))
        }
        Refusal::KeyReused => error_field(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Idempotency-Key",
            "this key was already used with a different request body: send the original body \
             to get its run, or use a new key for a new request",
        ),
        Refusal::ThreadBusy {
            thread_id,
            run_id,
            retry_at_ms,
        } => {
            let retry_after = messages::wait_secs(retry_at_ms, now_ms);
            let body = json!({
                "error": "thread_busy",
                "run_id": run_id,
                "thread_id": thread_id,
                "message": format!(
                    "the previous turn of this thread (run {run_id}) is unfinished: retry in \
                     {retry_after} s, or once GET /workflow/runs/{run_id} shows it finished"
                ),
                "retry_after_seconds": retry_after,
            });
            ApiError::with_body(StatusCode::CONFLICT, body)
                .with_header(RETRY_AFTER, HeaderValue::from(retry_after))
        }
        Refusal::ThreadNotFound { thread_id } => error(
            StatusCode::NOT_FOUND,
            "not_found",
            &format!(
                "thread {thread_id} not found: it never had a turn of yours, expired \
                 (THREAD_TTL_SECONDS) or was deleted"
            ),
        ),
        Refusal::NoThreads { store } => error(
            StatusCode::NOT_IMPLEMENTED,
            "threads_unavailable",
            &format!("this deployment's checkpoint store ({store}) keeps no threads"),
        ),
        Refusal::Run(e) => engine_error(now_ms, e),
        Refusal::NoQueue => error(
            StatusCode::NOT_IMPLEMENTED,
            "no_queue",
            "asynchronous runs need WORK_QUEUE_URL, which this deployment does not set: use \
             POST /workflow/run for a synchronous run, or ask the operator to configure a queue",
        ),
        Refusal::Queue(e) => queue_error(e.class()),
        Refusal::NotForkable(e) => fork_refused(&e),
        Refusal::NotResumable(e) => resume_refused(&e),
    }
}

/// Why a fork was refused: a step that cannot be forked from is the request's fault (400,
/// naming `from_step`); a run still running or of another workflow version is a conflict.
fn fork_refused(e: &ForkRefusal) -> ApiError {
    let message = e.to_string();
    match e {
        _ if e.is_bad_step() => error_field(StatusCode::BAD_REQUEST, "from_step", &message),
        ForkRefusal::StillRunning { .. } => error(StatusCode::CONFLICT, "run_not_ended", &message),
        ForkRefusal::Step(RewindError::Corrupt(_)) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "corrupt_checkpoint",
            &message,
        ),
        _ => error(StatusCode::CONFLICT, "not_forkable", &message),
    }
}

/// The answer to an engine error: status by kind, a message saying what to do next, and
/// `Retry-After` where waiting helps. Store details go to the log, not to the caller.
fn engine_error(now_ms: u64, e: EngineError) -> ApiError {
    let message = messages::engine_error(&e, now_ms, Surface::Http);
    let (code, kind) = match &e {
        EngineError::NotFound { .. } => (StatusCode::NOT_FOUND, "not_found"),
        EngineError::Busy { .. } | EngineError::Lost { .. } | EngineError::Exists { .. } => {
            (StatusCode::CONFLICT, "conflict")
        }
        EngineError::Corrupt { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "corrupt_checkpoint"),
        EngineError::Store(s) => {
            tracing::error!(error = %s, "checkpoint store failed");
            (status_for(s.class()), "store_error")
        }
    };
    let answer = error(code, kind, &message);
    match &e {
        EngineError::Busy { until_ms, .. } => answer.with_header(
            RETRY_AFTER,
            HeaderValue::from(messages::wait_secs(*until_ms, now_ms)),
        ),
        EngineError::Store(s) if s.class() == ErrorClass::Transient => {
            answer.with_header(RETRY_AFTER, HeaderValue::from_static("2"))
        }
        _ => answer,
    }
}

/// The queue refused a message (the cause is logged where it was sent).
pub(super) fn queue_error(class: ErrorClass) -> ApiError {
    let answer = error(
        status_for(class),
        "queue_error",
        match class {
            ErrorClass::Transient => {
                "the work queue is unavailable right now; retry in a few seconds (with the same \
                 Idempotency-Key, if you sent one)"
            }
            ErrorClass::Permanent => {
                "the work queue refused the run, and retrying will not help: report this to the \
                 operator (the function's log has the details)"
            }
        },
    );
    match class {
        ErrorClass::Transient => answer.with_header(RETRY_AFTER, HeaderValue::from_static("2")),
        ErrorClass::Permanent => answer,
    }
}

/// The status of a failed store or queue call.
fn status_for(class: ErrorClass) -> StatusCode {
    match class {
        ErrorClass::Transient => StatusCode::SERVICE_UNAVAILABLE,
        ErrorClass::Permanent => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A run that does not take an answer: `409`, saying what the run is instead.
fn resume_refused(e: &ResumeRefusal) -> ApiError {
    let (code, run_id, what) = match e {
        ResumeRefusal::NotWaiting { run_id, status } => (
            "run_not_waiting",
            run_id,
            format!("it is {status}, and only a waiting run takes an answer"),
        ),
        ResumeRefusal::TimedOut { run_id } => (
            "interrupt_timeout",
            run_id,
            "it waited longer than INTERRUPT_TIMEOUT_SECONDS and ended best_effort with its best \
             answer so far"
                .to_owned(),
        ),
    };
    let body = json!({
        "error": code,
        "run_id": run_id,
        "message": format!(
            "run {run_id} does not take an answer: {what}; read it with GET /workflow/runs/{run_id}"
        ),
    });
    ApiError::with_body(StatusCode::CONFLICT, body)
}
