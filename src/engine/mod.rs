//! A small bounded state-graph engine. It knows nothing about RAG, HTTP or AWS.
//!
//! A [`Graph`] names typed nodes and runs one step at a time; [`advance`] owns every limit:
//! the step limit (counted across resumes), the deadline budget, the token budget (a node is not started when
//! the budget cannot cover it), per-node retry policies with full-jitter backoff, a
//! [`StepRecord`] per step and a checkpoint write after every step through [`Persist`].
//! A node may split into parallel branches that run concurrently ([`Graph::branches`]; the
//! branches in progress are the checkpoint's `Branching`); each branch is admitted against every
//! limit, recorded and checkpointed as a step of its own. The
//! checkpoint keeps a trail (`trail.rs`: the state before the first step and a JSON patch per
//! step, its long texts kept once per run in `texts.rs`), so the state after any step is rebuilt
//! without running it again (`rewind.rs`). A step may end the invocation to wait for a person
//! ([`Transition::Wait`], `wait.rs`): the run holds no lease an invocation binds, only a parked
//! one that lapses when [`Graph::wait_limit`] runs out; an answer moves it on at the node the
//! wait named, without running the step that asked again.

mod admit;
mod branches;
mod branching;
mod budget;
mod checkpoint;
mod ctx;
mod error;
mod graph;
mod limit;
mod record;
mod rewind;
mod runner;
mod session;
mod texts;
mod trail;
mod version;
mod wait;

pub(crate) use branching::Branching;
pub use budget::Budget;
pub(crate) use checkpoint::NodeFailure;
pub(crate) use checkpoint::Phase;
pub use checkpoint::{Checkpoint, FailedAt};
pub use ctx::StepCtx;
pub use error::EngineError;
pub use graph::{BranchOutput, Graph, NodeId, StepOutput, Transition};
pub use limit::Limit;
pub use record::StepRecord;
pub use rewind::Rewound;
pub use runner::advance;
pub use session::{run_key, Loaded, Persist, Session};
pub use trail::RewindError;
pub(crate) use version::{Incompatible, Versioning};
pub use version::{Shape, WorkflowVersion};
pub(crate) use wait::end_wait;
