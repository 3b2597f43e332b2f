//! Why the run life cycle did not do what an entry point asked: one typed reason per case. Each
//! entry point maps a [`Refusal`] to its own answer in one place (an HTTP status in
//! `entry/http/refusal.rs`, a CLI exit code in `entry/cli/output.rs`, an SQS batch item failure
//! in `entry/sqs.rs`).

use super::queue::QueueError;
use super::thread::ThreadError;
use crate::engine::{EngineError, Incompatible, RewindError};
use crate::rag::ValidationError;

/// Why a run request could not be read: found by the entry point's parser, refused by the run
/// life cycle after the request was counted in its caller's rate window.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Invalid {
    /// The body is larger than the entry point admits (`MAX_BODY_BYTES`).
    #[error("the body is {bytes} bytes; the limit is {limit}")]
    TooLarge {
        /// The body's size.
        bytes: usize,
        /// The largest size admitted.
        limit: usize,
    },
    /// A field of the request (or the `Idempotency-Key`) is invalid.
    #[error(transparent)]
    Field(#[from] ValidationError),
}

/// Why a call was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refusal {
    /// `MAX_REQUESTS_PER_CALLER_PER_MINUTE`: the caller's one-minute window is full.
    #[error("the limit of {limit} run requests per caller and minute is reached")]
    RateLimited {
        /// The limit in force.
        limit: u32,
        /// When the window ends (epoch ms).
        retry_at_ms: u64,
    },
    /// The request could not be read.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// `MAX_ACTIVE_RUNS_PER_CALLER`: the caller's unfinished runs fill its slots.
    #[error("{} unfinished runs; the limit is {limit} per caller", active.len())]
    TooManyActive {
        /// The limit in force.
        limit: u32,
        /// The caller's unfinished runs, oldest first.
        active: Vec<String>,
        /// When to try again (epoch ms).
        retry_at_ms: u64,
        /// When a slot is free at the latest, even if no run finishes (epoch ms).
        free_by_ms: u64,
    },
    /// The `Idempotency-Key` was used before with a different request body.
    #[error("the idempotency key was already used with a different request")]
    KeyReused,
    /// The thread's previous turn is unfinished.
    #[error("thread {thread_id} is busy with run {run_id}")]
    ThreadBusy {
        /// The thread.
        thread_id: String,
        /// The unfinished turn's run.
        run_id: String,
        /// When to try again (epoch ms).
        retry_at_ms: u64,
    },
    /// No such thread of this caller (never created, expired or deleted).
    #[error("thread {thread_id} not found")]
    ThreadNotFound {
        /// The thread.
        thread_id: String,
    },
    /// The checkpoint store keeps no threads.
    #[error("the checkpoint store ({store}) keeps no threads")]
    NoThreads {
        /// The store's name.
        store: &'static str,
    },
    /// The run's own call failed: not found (or another caller's), advanced by another
    /// invocation, unreadable, or the store failed (classified where it happened).
    #[error(transparent)]
    Run(#[from] EngineError),
    /// An asynchronous run needs the work queue (`WORK_QUEUE_URL`), which is not configured.
    #[error("asynchronous runs need WORK_QUEUE_URL, which is not set")]
    NoQueue,
    /// The work queue refused the run's message.
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// The run cannot be forked as asked.
    #[error(transparent)]
    NotForkable(#[from] ForkRefusal),
    /// The run does not take an answer.
    #[error(transparent)]
    NotResumable(#[from] ResumeRefusal),
}

impl From<ThreadError> for Refusal {
    fn from(e: ThreadError) -> Self {
        match e {
            ThreadError::Busy {
                thread_id,
                run_id,
                retry_at_ms,
            } => Refusal::ThreadBusy {
                thread_id,
                run_id,
                retry_at_ms,
            },
            ThreadError::NotFound { thread_id } => Refusal::ThreadNotFound { thread_id },
            ThreadError::Unsupported { store } => Refusal::NoThreads { store },
            ThreadError::Engine(e) => Refusal::Run(e),
        }
    }
}

/// Why a run cannot be forked as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ForkRefusal {
    /// The run may still take steps: fork it once it ended.
    #[error("run {run_id} is still {status}: fork it once it has ended")]
    StillRunning {
        /// The run.
        run_id: String,
        /// `running` or `suspended`.
        status: &'static str,
    },
    /// The run was written by a workflow version this code does not run.
    #[error("{0}: start a new run instead")]
    OtherVersion(Incompatible),
    /// The step asked for cannot be rewound to.
    #[error(transparent)]
    Step(RewindError),
}

impl ForkRefusal {
    /// True when the step number itself is what is wrong (the caller picks another).
    pub(crate) fn is_bad_step(&self) -> bool {
        matches!(
            self,
            ForkRefusal::Step(
                RewindError::PastEnd { .. }
                    | RewindError::AtEnd { .. }
                    | RewindError::InsideBranches { .. }
            )
        )
    }
}

/// Why a waiting run did not take an answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ResumeRefusal {
    /// The run does not wait for a person (any more).
    #[error("run {run_id} is {status}, not waiting for an answer")]
    NotWaiting {
        /// The run.
        run_id: String,
        /// Its status.
        status: &'static str,
    },
    /// The wait ran out before the answer came; the run ended `best_effort`.
    #[error("run {run_id} waited longer than INTERRUPT_TIMEOUT_SECONDS and ended with its best answer so far")]
    TimedOut {
        /// The run.
        run_id: String,
    },
}
