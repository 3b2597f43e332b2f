//! The API Gateway HTTP API (payload v2) / function URL handler: routing, validation,
//! idempotency and the mapping of run statuses to HTTP codes. No workflow logic here.

use super::{metrics, App};
use crate::engine::EngineError;
use crate::error::{Classify, ErrorClass};
use crate::queue::{WorkMessage, WorkQueue};
use crate::rag::idempotency::{self, Claim};
use crate::rag::{RunRequest, RunResponse, RunStatus, ValidationError, Workflow};
use lambda_http::http::{Method, StatusCode};
use lambda_http::{Body, Request, RequestExt, Response};
use serde_json::{json, Value};

/// Longest accepted `Idempotency-Key`.
const MAX_IDEMPOTENCY_KEY: usize = 255;

/// Handles one HTTP request. Never fails: every error becomes a JSON response.
pub async fn handle(app: &App, queue: Option<&dyn WorkQueue>, request: Request) -> Response<Body> {
    let deadline = request.lambda_context_ref().map(|c| c.deadline);
    let method = request.method().clone();
    let path = request.uri().path().trim_end_matches('/').to_owned();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let result = match (method, segments.as_slice()) {
        (Method::POST, ["workflow", "run"]) => run_sync(app, queue, &request, deadline).await,
        (Method::POST, ["workflow", "runs"]) => run_async(app, queue, &request).await,
        (Method::GET, ["workflow", "runs", run_id]) => get_run(app, run_id).await,
        (_, ["workflow", "run"]) | (_, ["workflow", "runs"]) | (_, ["workflow", "runs", _]) => {
            Err(error(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "method not allowed on this route",
            ))
        }
        _ => Err(error(
            StatusCode::NOT_FOUND,
            "not_found",
            &format!("no route for {path}"),
        )),
    };
    result.unwrap_or_else(Response::from)
}

/// An error answer: status and JSON body, turned into a response at the top.
#[derive(Debug)]
pub(super) struct ApiError {
    code: StatusCode,
    body: Value,
}

impl From<ApiError> for Response<Body> {
    fn from(e: ApiError) -> Self {
        json_response(e.code, &e.body)
    }
}

pub(super) type Reply = Result<Response<Body>, ApiError>;

async fn run_sync(
    app: &App,
    queue: Option<&dyn WorkQueue>,
    request: &Request,
    deadline: Option<u64>,
) -> Reply {
    let (run_request, body) = parse_body(app, request)?;
    let run = claim(app, request, &body).await?;
    run_claimed(app, queue, &app.workflow(), run, run_request, deadline).await
}

/// Runs a validated, claimed request within the invocation's budget and shapes the answer
/// (the streaming handler passes a workflow whose graph reports events).
pub(super) async fn run_claimed(
    app: &App,
    queue: Option<&dyn WorkQueue>,
    workflow: &Workflow<'_>,
    run: Run,
    run_request: RunRequest,
    deadline: Option<u64>,
) -> Reply {
    let budget = app.budget(deadline);
    let run_id = match run {
        Run::New(run_id) => run_id,
        Run::Repeat(run_id) => {
            // A repeat: never a second run. Finish the same one if it can be advanced.
            let response = match workflow.resume(&run_id, &budget).await {
                Err(EngineError::NotFound { .. }) => {
                    workflow.run_new(&run_id, run_request, &budget).await
                }
                other => other,
            };
            return match response {
                Err(EngineError::Busy { .. }) => Ok(accepted(&run_id, RunStatus::Running)),
                other => finish(app, queue, other.map_err(engine_error)?).await,
            };
        }
    };
    let response = workflow
        .run_new(&run_id, run_request, &budget)
        .await
        .map_err(engine_error)?;
    finish(app, queue, response).await
}

async fn run_async(app: &App, queue: Option<&dyn WorkQueue>, request: &Request) -> Reply {
    let Some(queue) = queue else {
        return Err(error(
            StatusCode::NOT_IMPLEMENTED,
            "no_queue",
            "asynchronous runs need WORK_QUEUE_URL to be configured",
        ));
    };
    let (run_request, body) = parse_body(app, request)?;
    let run_id = match claim(app, request, &body).await? {
        Run::New(run_id) => run_id,
        Run::Repeat(run_id) => {
            return get_run(app, &run_id)
                .await
                .or_else(|_| Ok(accepted(&run_id, RunStatus::Running)))
        }
    };
    let workflow = app.workflow();
    workflow
        .submit(&run_id, run_request.clone())
        .await
        .map_err(engine_error)?;
    let message = WorkMessage {
        run_id: run_id.clone(),
        request: Some(run_request),
    };
    queue.send(&message).await.map_err(|e| {
        tracing::error!(run_id, error = %e, "could not queue the run");
        error(status_for(e.class()), "queue_error", &e.to_string())
    })?;
    tracing::info!(run_id, "run queued");
    Ok(accepted(&run_id, RunStatus::Running))
}

async fn get_run(app: &App, run_id: &str) -> Reply {
    if run_id.is_empty()
        || run_id.len() > 128
        || !run_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(error_field(
            StatusCode::BAD_REQUEST,
            "run_id",
            "must be 1..=128 characters of letters, digits, '-' or '_'",
        ));
    }
    let response = app.workflow().status(run_id).await.map_err(engine_error)?;
    Ok(json_response(StatusCode::OK, &response))
}

/// Shapes a run's response; a suspended run gets its continuation queued first.
async fn finish(app: &App, queue: Option<&dyn WorkQueue>, response: RunResponse) -> Reply {
    metrics::emit_run(&response, app.clock.now_ms());
    match response.status {
        RunStatus::Completed | RunStatus::BestEffort => {
            Ok(json_response(StatusCode::OK, &response))
        }
        RunStatus::Running => Ok(accepted(&response.run_id, RunStatus::Running)),
        RunStatus::Suspended => {
            let Some(queue) = queue else {
                return Ok(json_response(StatusCode::OK, &response));
            };
            queue.send(&WorkMessage::continuation(&response.run_id)).await.map_err(|e| {
                tracing::error!(run_id = response.run_id, error = %e, "could not queue the continuation");
                error(status_for(e.class()), "queue_error", &e.to_string())
            })?;
            tracing::info!(
                run_id = response.run_id,
                "budget used up: continuation queued"
            );
            Ok(accepted(&response.run_id, RunStatus::Suspended))
        }
        RunStatus::Failed => {
            let class = response
                .error
                .as_ref()
                .map(|e| e.class)
                .unwrap_or(ErrorClass::Permanent);
            let code = match class {
                ErrorClass::Transient => StatusCode::SERVICE_UNAVAILABLE,
                ErrorClass::Permanent => StatusCode::BAD_GATEWAY,
            };
            Ok(json_response(code, &response))
        }
    }
}

pub(super) fn parse_body(app: &App, request: &Request) -> Result<(RunRequest, Vec<u8>), ApiError> {
    let body = request.body().as_ref().to_vec();
    let max = app.settings.max_body_bytes;
    if body.len() > max {
        return Err(error_field(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body",
            &format!("body is {} bytes; the limit is {max}", body.len()),
        ));
    }
    let run_request = RunRequest::from_json(&body)
        .map_err(|e: ValidationError| error_field(StatusCode::BAD_REQUEST, &e.field, &e.message))?;
    Ok((run_request, body))
}

/// The run a request is about.
pub(super) enum Run {
    /// A new run with this id.
    New(String),
    /// A repeat of an earlier request with the same `Idempotency-Key`.
    Repeat(String),
}

/// Maps the `Idempotency-Key` header (if any) to a run id.
pub(super) async fn claim(app: &App, request: &Request, body: &[u8]) -> Result<Run, ApiError> {
    let run_id = uuid::Uuid::new_v4().to_string();
    let Some(header) = request.headers().get("idempotency-key") else {
        return Ok(Run::New(run_id));
    };
    let key = header
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|k| !k.is_empty() && k.len() <= MAX_IDEMPOTENCY_KEY)
        .ok_or_else(|| {
            error_field(
                StatusCode::BAD_REQUEST,
                "Idempotency-Key",
                "must be 1..=255 visible ASCII characters",
            )
        })?;
    match idempotency::claim(app.store.as_ref(), key, body, &run_id)
        .await
        .map_err(engine_error)?
    {
        Claim::New(id) => Ok(Run::New(id)),
        Claim::Existing(id) => Ok(Run::Repeat(id)),
        Claim::Mismatch => Err(error_field(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Idempotency-Key",
            "this key was already used with a different request body",
        )),
    }
}

fn accepted(run_id: &str, status: RunStatus) -> Response<Body> {
    json_response(
        StatusCode::ACCEPTED,
        &json!({ "run_id": run_id, "status": status, "status_url": format!("/workflow/runs/{run_id}") }),
    )
}

fn engine_error(e: EngineError) -> ApiError {
    let (code, kind) = match &e {
        EngineError::NotFound { .. } => (StatusCode::NOT_FOUND, "not_found"),
        EngineError::Busy { .. } | EngineError::Lost { .. } | EngineError::Exists { .. } => {
            (StatusCode::CONFLICT, "conflict")
        }
        EngineError::Corrupt { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "corrupt_checkpoint"),
        EngineError::Store(s) => (status_for(s.class()), "store_error"),
    };
    error(code, kind, &e.to_string())
}

fn status_for(class: ErrorClass) -> StatusCode {
    match class {
        ErrorClass::Transient => StatusCode::SERVICE_UNAVAILABLE,
        ErrorClass::Permanent => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

fn error(code: StatusCode, kind: &str, message: &str) -> ApiError {
    ApiError {
        code,
        body: json!({ "error": kind, "message": message }),
    }
}

fn error_field(code: StatusCode, field: &str, message: &str) -> ApiError {
    ApiError {
        code,
        body: json!({ "error": "invalid_request", "field": field, "message": message }),
    }
}

fn json_response(code: StatusCode, body: &impl serde::Serialize) -> Response<Body> {
    let text = serde_json::to_string(body).unwrap_or_else(|e| {
        json!({ "error": "serialization", "message": e.to_string() }).to_string()
    });
    let mut response = Response::new(Body::Text(text));
    *response.status_mut() = code;
    response.headers_mut().insert(
        lambda_http::http::header::CONTENT_TYPE,
        lambda_http::http::HeaderValue::from_static("application/json"),
    );
    response
}

/// Parses a JSON value out of a response body (tests and the CLI use it).
pub fn body_json(response: &Response<Body>) -> Value {
    serde_json::from_slice(response.body().as_ref()).unwrap_or(Value::Null)
}
