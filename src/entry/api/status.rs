//! How every HTTP answer is shaped: JSON bodies, error answers with their status codes and
//! extra headers, the 202 of a run that goes on elsewhere. Which status a refusal gets is
//! `refusal.rs`'s; which a run's answer gets, `answer.rs`'s.

use crate::error::ErrorClass;
use crate::rag::RunStatus;
use lambda_http::http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
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

/// 202 with the run's id, status and where to read it.
pub(super) fn accepted(run_id: &str, status: RunStatus) -> Response<Body> {
    json_response(
        StatusCode::ACCEPTED,
        &json!({ "run_id": run_id, "status": status, "status_url": format!("/workflow/runs/{run_id}") }),
    )
}

/// The status of a failed run: 503 when retrying may help, 502 when it will not.
pub(super) fn failed_run_status(class: ErrorClass) -> StatusCode {
    match class {
        ErrorClass::Transient => StatusCode::SERVICE_UNAVAILABLE,
        ErrorClass::Permanent => StatusCode::BAD_GATEWAY,
    }
}

/// `{"error": kind, "message": message}`.
pub(super) fn error(code: StatusCode, kind: &str, message: &str) -> ApiError {
    ApiError::with_body(code, json!({ "error": kind, "message": message }))
}

/// An invalid request, naming the field at fault.
pub(crate) fn error_field(code: StatusCode, field: &str, message: &str) -> ApiError {
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
