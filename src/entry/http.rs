//! The API Gateway HTTP API (payload v2) / function URL handler: routing, validation, the
//! caller's identity, idempotency, the per-caller active-run limit and the mapping of run
//! statuses to HTTP codes. No workflow logic here. The contract is `openapi.yaml`.

use super::caller;
use super::messages::{self, Surface};
use super::{metrics, App};
use crate::engine::{utc_seconds, EngineError};
use crate::error::{Classify, ErrorClass};
use crate::queue::{WorkMessage, WorkQueue};
use crate::rag::active::{ActiveRuns, Admission};
use crate::rag::idempotency::{self, Claim};
use crate::rag::{Caller, RunRequest, RunResponse, RunStatus, ValidationError, Workflow};
use lambda_http::http::header::{HeaderName, HeaderValue, ALLOW, RETRY_AFTER};
use lambda_http::http::{Method, StatusCode};
use lambda_http::{Body, Request, RequestExt, Response};
use serde_json::{json, Value};

/// Longest accepted `Idempotency-Key`.
const MAX_IDEMPOTENCY_KEY: usize = 255;
/// The routes, for the answer to a request that matches none.
const ROUTES: &str =
    "POST /workflow/run, POST /workflow/runs and GET /workflow/runs/{run_id} (see openapi.yaml)";

/// Handles one HTTP request. Never fails: every error becomes a JSON response.
pub async fn handle(app: &App, queue: Option<&dyn WorkQueue>, request: Request) -> Response<Body> {
    let deadline = request.lambda_context_ref().map(|c| c.deadline);
    let caller = caller::of(&request);
    let method = request.method().clone();
    let path = request.uri().path().trim_end_matches('/').to_owned();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let result = match (&method, segments.as_slice()) {
        (&Method::POST, ["workflow", "run"]) => {
            run_sync(app, queue, &caller, &request, deadline).await
        }
        (&Method::POST, ["workflow", "runs"]) => run_async(app, queue, &caller, &request).await,
        (&Method::GET, ["workflow", "runs", run_id]) => get_run(app, &caller, run_id).await,
        (_, ["workflow", "run"]) | (_, ["workflow", "runs"]) => {
            Err(method_not_allowed(&method, &path, "POST"))
        }
        (_, ["workflow", "runs", _]) => Err(method_not_allowed(&method, &path, "GET")),
        _ => Err(error(
            StatusCode::NOT_FOUND,
            "not_found",
            &format!("no route for {path}; the routes are {ROUTES}"),
        )),
    };
    result.unwrap_or_else(Response::from)
}

/// An error answer: status, JSON body and extra headers, turned into a response at the top.
#[derive(Debug)]
pub(super) struct ApiError {
    code: StatusCode,
    body: Value,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl ApiError {
    fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
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

pub(super) type Reply = Result<Response<Body>, ApiError>;

async fn run_sync(
    app: &App,
    queue: Option<&dyn WorkQueue>,
    caller: &Caller,
    request: &Request,
    deadline: Option<u64>,
) -> Reply {
    let (run_request, body) = parse_body(app, request)?;
    let run = claim(app, caller, request, &body).await?;
    run_claimed(
        app,
        queue,
        &app.workflow(),
        caller,
        run,
        run_request,
        deadline,
    )
    .await
}

/// Runs a validated, claimed request within the invocation's budget and shapes the answer
/// (the streaming handler passes a workflow whose graph reports events).
pub(super) async fn run_claimed(
    app: &App,
    queue: Option<&dyn WorkQueue>,
    workflow: &Workflow<'_>,
    caller: &Caller,
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
                    workflow
                        .for_caller(caller)
                        .run_new(&run_id, run_request, &budget)
                        .await
                }
                other => other,
            };
            return match response {
                Err(EngineError::Busy { .. }) => Ok(accepted(&run_id, RunStatus::Running)),
                other => finish(app, queue, other.map_err(|e| engine_error(app, e))?).await,
            };
        }
    };
    let response = workflow
        .for_caller(caller)
        .run_new(&run_id, run_request, &budget)
        .await
        .map_err(|e| engine_error(app, e))?;
    finish(app, queue, response).await
}

async fn run_async(
    app: &App,
    queue: Option<&dyn WorkQueue>,
    caller: &Caller,
    request: &Request,
) -> Reply {
    let Some(queue) = queue else {
        return Err(error(
            StatusCode::NOT_IMPLEMENTED,
            "no_queue",
            "asynchronous runs need WORK_QUEUE_URL, which this deployment does not set: use              POST /workflow/run for a synchronous run, or ask the operator to configure a queue",
        ));
    };
    let (run_request, body) = parse_body(app, request)?;
    let run_id = match claim(app, caller, request, &body).await? {
        Run::New(run_id) => run_id,
        Run::Repeat(run_id) => {
            return get_run(app, caller, &run_id)
                .await
                .or_else(|_| Ok(accepted(&run_id, RunStatus::Running)))
        }
    };
    let workflow = app.workflow();
    workflow
        .for_caller(caller)
        .submit(&run_id, run_request.clone())
        .await
        .map_err(|e| engine_error(app, e))?;
    let message = WorkMessage {
        run_id: run_id.clone(),
        request: Some(run_request),
    };
    queue.send(&message).await.map_err(|e| {
        tracing::error!(run_id, error = %e, "could not queue the run");
        queue_error(e.class())
    })?;
    tracing::info!(run_id, caller = caller.kind(), "run queued");
    Ok(accepted(&run_id, RunStatus::Running))
}

async fn get_run(app: &App, caller: &Caller, run_id: &str) -> Reply {
    if run_id.is_empty()
        || run_id.len() > 128
        || !run_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(error_field(
            StatusCode::BAD_REQUEST,
            "run_id",
            "must be 1..=128 characters of letters, digits, '-' or '_': use the run_id a              POST /workflow/run or POST /workflow/runs answered with",
        ));
    }
    let response = app
        .workflow()
        .for_caller(caller)
        .status(run_id)
        .await
        .map_err(|e| engine_error(app, e))?;
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
                queue_error(e.class())
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
            &format!(
                "body is {} bytes; the limit is {max}: send a shorter body (a question has at \
                 most 2000 characters)",
                body.len()
            ),
        ));
    }
    let run_request = RunRequest::from_json(&body)
        .map_err(|e: ValidationError| error_field(StatusCode::BAD_REQUEST, &e.field, &e.message))?;
    Ok((run_request, body))
}

/// The run a request is about.
pub(super) enum Run {
    /// A new run with this id (admitted under the caller's active-run limit).
    New(String),
    /// A repeat of an earlier request with the same `Idempotency-Key`, whose run exists.
    Repeat(String),
}

/// Maps the `Idempotency-Key` header (if any) of `caller` to a run id, and admits a new run
/// under the caller's active-run limit (429 past it).
pub(super) async fn claim(
    app: &App,
    caller: &Caller,
    request: &Request,
    body: &[u8],
) -> Result<Run, ApiError> {
    let fresh = uuid::Uuid::new_v4().to_string();
    let run_id = match idempotency_key(request)? {
        None => fresh,
        Some(key) => match idempotency::claim(app.store.as_ref(), caller, key, body, &fresh)
            .await
            .map_err(|e| engine_error(app, e))?
        {
            Claim::New(id) => id,
            Claim::Existing(id) => {
                // A repeat whose first request never got its run stored (refused by the
                // limit, or cut short) starts that run now, under the limit like a new one.
                match app.workflow().for_caller(caller).status(&id).await {
                    Ok(_) => return Ok(Run::Repeat(id)),
                    Err(EngineError::NotFound { .. }) => id,
                    Err(e) => return Err(engine_error(app, e)),
                }
            }
            Claim::Mismatch => {
                return Err(error_field(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "Idempotency-Key",
                    "this key was already used with a different request body: send the \
                     original body to get its run, or use a new key for a new request",
                ))
            }
        },
    };
    admit(app, caller, &run_id).await?;
    Ok(Run::New(run_id))
}

/// The trimmed `Idempotency-Key` header, if any; 400 when it is malformed.
fn idempotency_key(request: &Request) -> Result<Option<&str>, ApiError> {
    let Some(header) = request.headers().get("idempotency-key") else {
        return Ok(None);
    };
    header
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|k| !k.is_empty() && k.len() <= MAX_IDEMPOTENCY_KEY)
        .map(Some)
        .ok_or_else(|| {
            error_field(
                StatusCode::BAD_REQUEST,
                "Idempotency-Key",
                "must be 1..=255 visible ASCII characters, e.g. a UUID; send one key per \
                 logical request",
            )
        })
}

/// Takes a slot of the caller's active-run limit for `run_id`, or answers 429.
async fn admit(app: &App, caller: &Caller, run_id: &str) -> Result<(), ApiError> {
    let Some(limit) = app.settings.limits.max_active_runs_per_caller else {
        return Ok(());
    };
    let now_ms = app.clock.now_ms();
    let admission = ActiveRuns::new(app.store.as_ref(), limit)
        .admit(caller, run_id, now_ms)
        .await
        .map_err(|e| engine_error(app, e))?;
    let Admission::Full {
        limit,
        active,
        retry_at_ms,
        free_by_ms,
    } = admission
    else {
        return Ok(());
    };
    let retry_after = messages::wait_secs(retry_at_ms, now_ms);
    tracing::info!(
        caller = caller.kind(),
        limit,
        retry_after,
        "active-run limit reached"
    );
    let message = format!(
        "you have {} unfinished runs and the limit is {limit} per caller \
         (MAX_ACTIVE_RUNS_PER_CALLER): retry in {retry_after} s, or as soon as one of them \
         finishes (GET /workflow/runs/{{run_id}}); a run that never finishes stops counting by \
         {} at the latest",
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
    Err(ApiError {
        code: StatusCode::TOO_MANY_REQUESTS,
        body,
        headers: Vec::new(),
    }
    .with_header(RETRY_AFTER, HeaderValue::from(retry_after)))
}

fn method_not_allowed(method: &Method, path: &str, allowed: &'static str) -> ApiError {
    error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        &format!("{method} is not accepted on {path}: use {allowed} (the routes are {ROUTES})"),
    )
    .with_header(ALLOW, HeaderValue::from_static(allowed))
}

fn accepted(run_id: &str, status: RunStatus) -> Response<Body> {
    json_response(
        StatusCode::ACCEPTED,
        &json!({ "run_id": run_id, "status": status, "status_url": format!("/workflow/runs/{run_id}") }),
    )
}

/// The answer to an engine error: status by kind, a message saying what to do next, and
/// `Retry-After` where waiting helps. Store details go to the log, not to the caller.
fn engine_error(app: &App, e: EngineError) -> ApiError {
    let now_ms = app.clock.now_ms();
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
fn queue_error(class: ErrorClass) -> ApiError {
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
        headers: Vec::new(),
    }
}

fn error_field(code: StatusCode, field: &str, message: &str) -> ApiError {
    ApiError {
        code,
        body: json!({ "error": "invalid_request", "field": field, "message": message }),
        headers: Vec::new(),
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
