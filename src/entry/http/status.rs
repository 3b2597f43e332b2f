//! How every HTTP answer is shaped: JSON bodies, error answers with their status codes and
//! `Retry-After`, and the mapping of engine and queue errors (classified once, where they
//! happen) to status codes. Store details go to the log, never to the caller.

use crate::engine::{Clock, EngineError};
use crate::entry::messages::{self, Surface};
use crate::error::{Classify, ErrorClass};
use crate::rag::RunStatus;
use lambda_http::http::header::{HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use lambda_http::http::StatusCode;
use lambda_http::{Body, Response};
use serde_json::{json, Value};

/// An error answer: status, JSON body and extra headers, turned into a response at the top.
#[derive(Debug)]
pub(crate) struct ApiError {
    code: StatusCode,
    body: Value,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl ApiError {
    /// An answer with a body of its own (not the `{error, message}` shape).
    pub(super) fn with_body(code: StatusCode, body: Value) -> Self {
        Self {
            code,
            body,
            headers: Vec::new(),
        }
    }

    pub(super) fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }
}

impl From<ApiError> for Response<Body> {
    fn from(e: ApiError) -> Self {
        let mut response = json_response(e.code, &e.body);
        for (name, value) in e.headers {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

/// A handler's answer: a response, or an error answer.
pub(crate) type Reply = Result<Response<Body>, ApiError>;

/// 202 with the run's id, status and where to read it.
pub(super) fn accepted(run_id: &str, status: RunStatus) -> Response<Body> {
    json_response(
        StatusCode::ACCEPTED,
        &json!({ "run_id": run_id, "status": status, "status_url": format!("/workflow/runs/{run_id}") }),
    )
}

/// The answer to an engine error: status by kind, a message saying what to do next, and
/// `Retry-After` where waiting helps. Store details go to the log, not to the caller.
pub(super) fn engine_error(clock: &dyn Clock, e: EngineError) -> ApiError {
    let now_ms = clock.now_ms();
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

/// The queue refused a message (the cause is logged by the caller of this).
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

/// The status of a failed run: 503 when retrying may help, 502 when it will not.
pub(super) fn failed_run_status(class: ErrorClass) -> StatusCode {
    match class {
        ErrorClass::Transient => StatusCode::SERVICE_UNAVAILABLE,
        ErrorClass::Permanent => StatusCode::BAD_GATEWAY,
    }
}

/// The status of a failed store or queue call.
fn status_for(class: ErrorClass) -> StatusCode {
    match class {
        ErrorClass::Transient => StatusCode::SERVICE_UNAVAILABLE,
        ErrorClass::Permanent => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// `{"error": kind, "message": message}`.
pub(super) fn error(code: StatusCode, kind: &str, message: &str) -> ApiError {
    ApiError::with_body(code, json!({ "error": kind, "message": message }))
}

/// An invalid request, naming the field at fault.
pub(super) fn error_field(code: StatusCode, field: &str, message: &str) -> ApiError {
    ApiError::with_body(
        code,
        json!({ "error": "invalid_request", "field": field, "message": message }),
    )
}

/// `body` as an `application/json` response.
pub(super) fn json_response(code: StatusCode, body: &impl serde::Serialize) -> Response<Body> {
    let text = serde_json::to_string(body).unwrap_or_else(|e| {
        json!({ "error": "serialization", "message": e.to_string() }).to_string()
    });
    let mut response = Response::new(Body::Text(text));
    *response.status_mut() = code;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// Parses a JSON value out of a response body (tests and the CLI use it).
pub fn body_json(response: &Response<Body>) -> Value {
    serde_json::from_slice(response.body().as_ref()).unwrap_or(Value::Null)
}
