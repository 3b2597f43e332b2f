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

pub mod active;
mod caller;
mod error;
mod events;
mod graph;
pub mod idempotency;
mod limit_hit;
mod node;
mod nodes;
mod prompts;
mod request;
mod rerank;
mod response;
mod service;
mod state;
mod tenant;
mod version;

pub use caller::Caller;
pub use error::RagError;
pub use events::{Counters, Events, RunEvent};
pub use graph::{RagGraph, RagLimits};
pub use limit_hit::LimitHit;
pub use node::RagNode;
pub use request::{Mode, RunRequest, ValidationError};
pub use response::{Metadata, RunError, RunResponse, RunStatus, Tokens};
pub use service::{RagCheckpoint, Workflow, QUEUED_LEASE};
pub use state::{BestEffortReason, Citation, Outcome, RagState};
