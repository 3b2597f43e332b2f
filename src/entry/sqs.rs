//! The SQS worker: every record of a batch is a new run or a continuation, processed
//! concurrently; only the records that should come back are reported in `batchItemFailures`.
//!
//! | outcome | reported as failure? |
//! |---|---|
//! | run finished, or advanced and its continuation queued | no |
//! | another invocation holds the run (lease live) | yes: SQS redelivers later |
//! | transient store, queue or node failure | yes |
//! | a duplicate of a finished run | no: nothing is advanced twice |
//! | a cancelled run (queued, suspended, or cancelled while this invocation ran it) | no: it never resumes |
//! | poison (unreadable body, invalid request, unknown run) | yes, until the redrive policy moves it to the DLQ; the run is marked `failed` with the reason |

use super::metrics;
use crate::engine::EngineError;
use crate::error::{Classify, ErrorClass};
use crate::rag::RunStatus;
use crate::runs::{Continuation, Ran, Refusal, Runs, WorkMessage, WorkQueue};
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use lambda_runtime::Context;
use tracing::Instrument;

/// What happened to one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordOutcome {
    /// Processed; delete the message.
    Done,
    /// Worth another delivery.
    Retry(String),
    /// Can never succeed; leave it to the redrive policy (dead-letter queue).
    Poison(String),
}

/// Processes a batch concurrently and reports the records that must come back. Each run's
/// budget is drawn from `invocation`'s deadline ([`Runs::budget`]; `None` outside Lambda).
/// The worker uses nothing but the runs (an [`App`](super::App) gives them).
pub async fn handle_batch(
    runs: &impl AsRef<Runs>,
    queue: Option<&dyn WorkQueue>,
    event: SqsEvent,
    invocation: Option<&Context>,
) -> SqsBatchResponse {
    let runs = runs.as_ref();
    let outcomes = futures::future::join_all(event.records.iter().map(|record| {
        let id = record.message_id.clone().unwrap_or_default();
        // The trace of whoever queued the message, else this invocation's (X-Ray).
        let traceparent = record
            .message_attributes
            .get(crate::otlp::TRACEPARENT)
            .and_then(|a| a.string_value.clone())
            .or_else(|| crate::otlp::invocation_traceparent(invocation))
            .unwrap_or_default();
        let span = tracing::info_span!("sqs_record", message_id = %id, traceparent);
        async move { (id, handle_record(runs, queue, record, invocation).await) }.instrument(span)
    }))
    .await;
    crate::otlp::flush().await;
    let mut response = SqsBatchResponse::default();
    for (id, outcome) in outcomes {
        match outcome {
            RecordOutcome::Done => {}
            RecordOutcome::Retry(reason) => {
                tracing::warn!(message_id = %id, reason, "record will be redelivered");
                response.add_failure(id);
            }
            RecordOutcome::Poison(reason) => {
                tracing::error!(message_id = %id, reason, "poison message: left for the dead-letter queue");
                response.add_failure(id);
            }
        }
    }
    response
}

/// Processes one record.
pub async fn handle_record(
    runs: &impl AsRef<Runs>,
    queue: Option<&dyn WorkQueue>,
    record: &SqsMessage,
    invocation: Option<&Context>,
) -> RecordOutcome {
    let runs = runs.as_ref();
    let body = record.body.as_deref().unwrap_or_default();
    let message: WorkMessage = match serde_json::from_str(body) {
        Ok(m) => m,
        Err(e) => {
            let reason = format!("unreadable message body: {e}");
            if let Some(run_id) = run_id_of(body) {
                runs.poison(&run_id, &reason, None).await;
            }
            return RecordOutcome::Poison(reason);
        }
    };
    let run_id = message.run_id.clone();
    let span = tracing::info_span!("run", run_id = %run_id);
    let budget = runs.budget(invocation);
    async {
        match runs.work(message, &budget, queue).await {
            Ok(ran) => outcome(ran, runs.clock().now_ms()),
            Err(refusal) => refused(&run_id, refusal),
        }
    }
    .instrument(span)
    .await
}

/// What a refused message gets: a redelivery when it may succeed later, the dead-letter queue
/// when it never will.
fn refused(run_id: &str, refusal: Refusal) -> RecordOutcome {
    match refusal {
        Refusal::Run(EngineError::NotFound { .. }) => RecordOutcome::Poison(format!(
            "run {run_id} does not exist (expired or never created)"
        )),
        Refusal::Run(EngineError::Lost { .. }) => {
            tracing::info!("another invocation advanced this run; nothing to do");
            RecordOutcome::Done
        }
        Refusal::Run(e) if e.class() == ErrorClass::Transient => {
            RecordOutcome::Retry(e.to_string())
        }
        Refusal::Invalid(e) => RecordOutcome::Poison(format!("invalid request: {e}")),
        other => RecordOutcome::Poison(other.to_string()),
    }
}

/// What a run this record advanced gets.
fn outcome(ran: Ran, now_ms: u64) -> RecordOutcome {
    let Ran {
        response,
        continuation,
        event_unsent,
    } = ran;
    metrics::emit_run(&response, now_ms);
    // A put that failed comes back with this record's next delivery (or the sweep).
    if let Some(e) = event_unsent {
        return RecordOutcome::Retry(format!("completion event not sent: {e}"));
    }
    match response.status {
        // A waiting run is answered through the API; nothing is left for this record.
        RunStatus::Completed
        | RunStatus::BestEffort
        | RunStatus::Cancelled
        | RunStatus::Waiting => RecordOutcome::Done,
        RunStatus::Running => RecordOutcome::Retry("run is still running".into()),
        RunStatus::Suspended => match continuation {
            Some(Continuation::Queued) => RecordOutcome::Done,
            // The run is checkpointed: redelivering this record resumes it.
            Some(Continuation::Failed(e)) => {
                RecordOutcome::Retry(format!("could not queue continuation: {e}"))
            }
            Some(Continuation::NoQueue) | None => {
                RecordOutcome::Retry("run suspended but no queue to continue it".into())
            }
        },
        RunStatus::Failed => match response.error.map(|e| (e.class, e.message)) {
            Some((ErrorClass::Transient, message)) => RecordOutcome::Retry(message),
            Some((ErrorClass::Permanent, message)) => {
                tracing::error!(error = message, "run failed permanently");
                RecordOutcome::Done
            }
            None => RecordOutcome::Done,
        },
    }
}

/// Best effort: the `run_id` of a body that is JSON but not a valid message.
fn run_id_of(body: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    value.get("run_id")?.as_str().map(str::to_owned)
}
