//! The adaptive-RAG workflow on top of the engine: state with typed counters, nodes, routers,
//! prompts, fallbacks, and the [`Workflow`] service that runs, resumes and reads runs.
//!
//! ```text
//! route_question -> kg_retrieval -> grade_documents -> decide_to_generate
//!                -> web_search -> generate
//!                -> generate (model alone)
//! decide_to_generate: relevant -> generate | none, rewrites left -> transform_query -> kg_retrieval
//!                     | rewrites exhausted -> web_search (fallback) -> generate
//! generate -> grade_hallucinations (the answer check is asked at the same time)
//!             : grounded -> grade_answer (uses that verdict) | not grounded -> generate (bounded)
//! grade_answer: useful -> END | not useful -> transform_query (bounded) | exhausted -> END best-effort
//! ```
//!
//! With speculation on (`SPECULATION`, the default), a run starts with `kg_retrieval`, then
//! the fork `speculate` runs `route_question`, `grade_documents` and `generate` at once; its
//! join uses the answer or discards it and goes on as above ([`speculation`](self) module).

pub mod active;
mod answer;
mod caller;
mod cancel;
mod error;
mod events;
mod graph;
mod history;
pub mod idempotency;
mod integral;
mod limit_hit;
mod listing;
mod model_call;
mod node;
mod nodes;
mod prompt_fit;
mod prompts;
mod replay;
mod request;
mod rerank;
mod response;
mod service;
mod speculation;
mod state;
mod tenant;
pub mod thread;
mod version;

pub use caller::Caller;
pub use cancel::Cancel;
pub use error::RagError;
pub use events::{Counters, Events, RunEvent};
pub use graph::{RagGraph, RagLimits};
pub use history::{StepEntry, StepPage, MAX_STEPS_PER_PAGE};
pub use limit_hit::LimitHit;
pub(crate) use listing::runs_owner;
pub use listing::{parse_status, RunIndexer, RunSummary};
pub use node::RagNode;
pub use replay::steps_after;
pub use request::{Mode, RunRequest, ValidationError};
pub use response::{Metadata, RunError, RunResponse, RunStatus, Tokens};
pub use service::{RagCheckpoint, Workflow, QUEUED_LEASE};
pub use speculation::SpeculationStats;
pub use state::{BestEffortReason, Citation, Outcome, RagState};
