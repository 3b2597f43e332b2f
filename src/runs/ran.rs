//! What an invocation that advanced a run (or found it) answers, and the one place that decides
//! what happens next to it ([`Runs::finish`]): a finished run's completion event is sent; a
//! suspended run's continuation is queued. The HTTP API, the stream function, the SQS worker
//! and the CLI all end their runs through here, so a suspended run is continued the same way
//! whoever ran it.

use super::finished::NotifyError;
use super::queue::{QueueError, WorkMessage, WorkQueue};
use super::service::Runs;
use crate::rag::{RunResponse, RunStatus};

/// What a request to run got.
#[derive(Debug)]
pub(crate) enum Answer {
    /// A repeated request whose run another invocation is advancing now: nothing was done.
    Busy(String),
    /// The run as this invocation left it.
    Ran(Box<Ran>),
}

/// A run as an invocation left it, and what was done about it.
#[derive(Debug)]
pub(crate) struct Ran {
    /// The run's response.
    pub(crate) response: RunResponse,
    /// For a suspended run: whether its continuation is queued.
    pub(crate) continuation: Option<Continuation>,
    /// For a finished run whose completion event is not sent yet: why (it will be, by the run's
    /// next delivery or the sweep; the run keeps its lease parked until then).
    pub(crate) event_unsent: Option<NotifyError>,
}

/// What became of a suspended run's continuation.
#[derive(Debug)]
pub(crate) enum Continuation {
    /// Queued: a worker continues the run.
    Queued,
    /// There is no work queue: the run stays suspended until resumed by hand.
    NoQueue,
    /// The queue refused it. The run is checkpointed with its lease parked, so the sweeper
    /// re-queues it once the lease lapses.
    Failed(QueueError),
}

impl Runs {
    /// Ends an invocation of a run: sends the completion event of a run that reached a final
    /// status, and queues the continuation of a suspended one on `queue`.
    pub(crate) async fn finish(&self, response: RunResponse, queue: Option<&dyn WorkQueue>) -> Ran {
        let run_id = response.run_id.as_str();
        let event_unsent = if response.status.is_final() {
            let sent = self.notify(run_id).await;
            if let Err(e) = &sent {
                tracing::warn!(run_id, error = %e, "completion event not sent yet");
            }
            sent.err()
        } else {
            None
        };
        if response.status == RunStatus::Waiting {
            self.announce_waiting(run_id).await;
        }
        let continuation = match (response.status, queue) {
            (RunStatus::Suspended, None) => Some(Continuation::NoQueue),
            (RunStatus::Suspended, Some(queue)) => {
                Some(match queue.send(&WorkMessage::continuation(run_id)).await {
                    Ok(()) => {
                        tracing::info!(run_id, "budget used up: continuation queued");
                        Continuation::Queued
                    }
                    Err(e) => {
                        tracing::error!(run_id, error = %e, "could not queue the continuation");
                        Continuation::Failed(e)
                    }
                })
            }
            _ => None,
        };
        Ran {
            response,
            continuation,
            event_unsent,
        }
    }
}
