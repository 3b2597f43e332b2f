//! A small bounded state-graph engine. It knows nothing about RAG, HTTP or AWS.
//!
//! A [`Graph`] names typed nodes and runs one step at a time; [`advance`] owns every limit:
//! the step limit (counted across resumes), the deadline budget, the token budget (a node is not started when
//! the budget cannot cover it), per-node retry policies with full-jitter backoff, a
//! [`StepRecord`] per step and a checkpoint write after every step through [`Persist`].
//! A node may fork into branches that run concurrently ([`Graph::branches`]); each branch
//! is admitted against every limit, recorded and checkpointed as a step of its own. The
//! checkpoint keeps a trail (`trail.rs`: the state before the first step and a JSON patch per
//! step, its long texts kept once per run in `texts.rs`), so the state after any step is rebuilt
//! without running it again (`rewind.rs`).

mod admit;
mod branches;
mod budget;
mod checkpoint;
mod ctx;
mod error;
mod fork;
mod graph;
mod limit;
mod record;
mod retry;
mod rewind;
mod runner;
mod session;
mod texts;
mod trail;
mod usage;
mod version;

pub use crate::clock::{Clock, FakeClock, SystemClock};
pub use budget::Budget;
pub(crate) use checkpoint::NodeFailure;
pub(crate) use checkpoint::Phase;
pub use checkpoint::{Checkpoint, FailedAt};
pub use ctx::StepCtx;
pub use error::EngineError;
pub(crate) use fork::Fork;
pub use graph::{BranchOutput, Graph, NodeId, StepOutput, Transition};
pub use limit::Limit;
pub(crate) use record::rfc3339_ms;
pub use record::{utc_seconds, StepRecord};
pub use retry::RetryPolicy;
pub use rewind::Rewound;
pub use runner::advance;
pub use session::{run_key, Loaded, Persist, Session};
pub use trail::RewindError;
pub(crate) use usage::estimate_tokens;
pub use usage::{Meter, Usage};
pub(crate) use version::{Incompatible, Versioning};
pub use version::{Shape, WorkflowVersion};
