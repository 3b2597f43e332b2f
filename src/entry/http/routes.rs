//! The route handlers: a synchronous run (`POST /workflow/run`), an asynchronous one
//! (`POST /workflow/runs`) and a run's status (`GET /workflow/runs/{run_id}`), and the shaping
//! of a run's answer (a suspended run gets its continuation queued first).

use super::api::Api;
use super::idempotency::{claim, Run};
use super::status::{
    accepted, engine_error, error, error_field, failed_run_status, json_response, queue_error,
    ApiError, Reply,
};
use crate::engine::{Budget, EngineError};
use crate::entry::metrics;
use crate::error::{Classify, ErrorClass};
use crate::runs::WorkMessage;
use crate::rag::thread::ThreadContext;
use crate::rag::{Caller, RunRequest, RunResponse, RunStatus, ValidationError};
use crate::runs::Workflow;
use lambda_http::http::StatusCode;
use lambda_http::{Request, RequestExt};

/// A valid request whose run is claimed: who asks, which run, and what to run.
pub(crate) struct Claimed {
    /// The caller, who owns the run.
    pub(crate) caller: Caller,
    /// The run (new, or the repeat of a keyed request).
    pub(crate) run: Run,
    /// The validated request.
    pub(crate) request: RunRequest,
    /// The thread turn the run answers (request field `thread_id`).
    pub(crate) thread: Option<ThreadContext>,
}

/// Reads and validates the body of `request` and claims its run; everything that can refuse
/// a run request (the request rate, body, `Idempotency-Key`, the active-run limit) answers here.
pub(crate) async fn prepare(
    api: Api<'_>,
    caller: Caller,
    request: &Request,
) -> Result<Claimed, ApiError> {
    super::rate_limit::count(api, &caller).await?;
    let (run_request, body) = parse_body(api, request)?;
    let run = claim(api, &caller, request, &body).await?;
    let thread = match &run {
        Run::New(run_id) => super::threads::begin(api, &caller, &run_request, run_id).await?,
        Run::Repeat(_) => None,
    };
    Ok(Claimed {
        caller,
        run,
        request: run_request,
        thread,
    })
}

/// `POST /workflow/run`: runs within the invocation's budget.
pub(super) async fn run_sync(api: Api<'_>, caller: Caller, request: &Request) -> Reply {
    let claimed = prepare(api, caller, request).await?;
    let budget = api.runs.budget(request.lambda_context_ref());
    run_claimed(api, &api.runs.workflow(), claimed, &budget).await
}

/// Runs a claimed request within `budget` and shapes the answer (the streaming handler
/// passes a workflow whose graph reports events).
pub(crate) async fn run_claimed(
    api: Api<'_>,
    workflow: &Workflow<'_>,
    claimed: Claimed,
    budget: &Budget,
) -> Reply {
    let Claimed {
        caller,
        run,
        request,
        thread,
    } = claimed;
    let clock = api.runs.clock();
    let run_id = match run {
        Run::New(run_id) => run_id,
        Run::Repeat(run_id) => {
            // A repeat: never a second run. Finish the same one if it can be advanced.
            let response = match workflow.resume(&run_id, budget).await {
                Err(EngineError::NotFound { .. }) => {
                    workflow
                        .for_caller(&caller)
                        .run_new(&run_id, request, budget)
                        .await
                }
                other => other,
            };
            return match response {
                Err(EngineError::Busy { .. }) => Ok(accepted(&run_id, RunStatus::Running)),
                other => finish(api, other.map_err(|e| engine_error(clock, e))?).await,
            };
        }
    };
    let thread_id = request.thread_id.clone();
    let response = workflow
        .for_caller(&caller)
        .in_thread(thread.as_ref())
        .run_new(&run_id, request, budget)
        .await;
    if let (Err(_), Some(thread_id)) = (&response, thread_id) {
        api.runs
            .threads()
            .abandon(&caller, &thread_id, &run_id)
            .await;
    }
    finish(api, response.map_err(|e| engine_error(clock, e))?).await
}

/// `POST /workflow/runs`: stores the run and queues it for the worker (501 without a queue).
pub(super) async fn run_async(api: Api<'_>, caller: Caller, request: &Request) -> Reply {
    let Some(queue) = api.queue else {
        return Err(error(
            StatusCode::NOT_IMPLEMENTED,
            "no_queue",
            "asynchronous runs need WORK_QUEUE_URL, which this deployment does not set: use \
             POST /workflow/run for a synchronous run, or ask the operator to configure a queue",
        ));
    };
    let claimed = prepare(api, caller, request).await?;
    let (caller, run_request, thread) = (claimed.caller, claimed.request, claimed.thread);
    let run_id = match claimed.run {
        Run::New(run_id) => run_id,
        Run::Repeat(run_id) => {
            return get_run(api, &caller, &run_id)
                .await
                .or_else(|_| Ok(accepted(&run_id, RunStatus::Running)))
        }
    };
    api.runs
        .workflow()
        .for_caller(&caller)
        .in_thread(thread.as_ref())
        .submit(&run_id, run_request.clone())
        .await
        .map_err(|e| engine_error(api.runs.clock(), e))?;
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

/// `GET /workflow/runs/{run_id}`: the run's status, and its answer once finished.
pub(super) async fn get_run(api: Api<'_>, caller: &Caller, run_id: &str) -> Reply {
    check_run_id(run_id)?;
    let response = api
        .runs
        .workflow()
        .for_caller(caller)
        .status(run_id)
        .await
        .map_err(|e| engine_error(api.runs.clock(), e))?;
    Ok(json_response(StatusCode::OK, &response))
}

/// A `run_id` path parameter as runs are named (400 otherwise).
pub(super) fn check_run_id(run_id: &str) -> Result<(), ApiError> {
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

/// Shapes a run's response; a suspended run gets its continuation queued first.
async fn finish(api: Api<'_>, response: RunResponse) -> Reply {
    metrics::emit_run(&response, api.runs.clock().now_ms());
    notify(api, &response).await;
    match response.status {
        RunStatus::Completed | RunStatus::BestEffort | RunStatus::Cancelled => {
            Ok(json_response(StatusCode::OK, &response))
        }
        RunStatus::Running => Ok(accepted(&response.run_id, RunStatus::Running)),
        RunStatus::Suspended => {
            let Some(queue) = api.queue else {
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
            Ok(json_response(failed_run_status(class), &response))
        }
    }
}

/// Sends the completion event of a finished run. A failure is only logged: the run keeps its
/// lease parked, so the sweeper re-queues it and that delivery sends the event.
pub(super) async fn notify(api: Api<'_>, response: &RunResponse) {
    if response.status.is_final() {
        if let Err(e) = api.runs.notify(&response.run_id).await {
            tracing::warn!(run_id = response.run_id, error = %e, "completion event not sent yet");
        }
    }
}

/// The request's body (at most `MAX_BODY_BYTES`, 413 past it) and the run request it holds
/// (400 naming the field at fault).
fn parse_body(api: Api<'_>, request: &Request) -> Result<(RunRequest, Vec<u8>), ApiError> {
    let body = request.body().as_ref().to_vec();
    let max = api.limits.max_body_bytes;
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
