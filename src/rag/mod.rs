//! The adaptive-RAG workflow on top of the engine: state with typed counters, nodes, routers,
//! prompts, the floor under every answer and the grades the words overrule (`floor`,
//! `overrule`), fallbacks, speculation, a forked run's first state (`forked`), the request it
//! answers and the response it gives. Running
//! it against a store (starting, resuming, cancelling, reading runs) is the run life cycle's
//! ([`crate::runs`]); nothing here manages runs or talks to AWS.
//!
//! ```text
//! route_question -> kg_retrieval -> grade_documents -> decide_to_generate
//!                -> web_search -> generate
//!                -> generate (model alone)
//! decide_to_generate: relevant -> generate | none, rewrites left -> transform_query -> kg_retrieval
//!                     | rewrites exhausted -> web_search (fallback) -> generate
//! generate -> grade_hallucinations (the answer check is asked at the same time)
//!   (an answer written without documents is first searched for with its own words: `research`)
//!             : grounded -> grade_answer (uses that verdict) | not grounded -> generate (bounded)
//! grade_answer: useful -> END | not useful -> transform_query (bounded) | exhausted -> END best-effort
//! ```
//!
//! With speculation on (`SPECULATION`, the default), a run starts with `kg_retrieval`, then
//! the parallel step `speculate` runs `route_question`, `grade_documents` and `generate` at once; its
//! join uses the answer or discards it and goes on as above ([`speculation`](self) module).

mod answer;
mod attribution;
mod caller;
mod checkpoint;
mod clarify;
mod diagram;
mod error;
mod fetch;
mod floor;
mod forked;
mod hooks;
mod integral;
mod interrupt;
mod kb_search;
mod limit_hit;
mod markers;
mod model_call;
mod node;
mod nodes;
mod overrule;
mod person;
mod prompt_fit;
pub(crate) mod prompts;
mod quoted;
mod rag_graph;
mod request;
mod rerank;
mod research;
mod response;
mod run_events;
mod sentences;
mod speculating;
mod speculation;
mod state;
mod tenant;
mod thread;
mod version;

pub use attribution::{Citation, Report as AttributionReport};
pub use caller::Caller;
pub use checkpoint::RagCheckpoint;
pub(crate) use diagram::{json as diagram_json, render as render_diagram, Format as DiagramFormat};
pub use error::RagError;
pub(crate) use forked::fork_state;
pub use forked::ForkChanges;
pub(crate) use interrupt::{answer as answer_interrupt, ReplyError};
pub use limit_hit::LimitHit;
pub use node::RagNode;
pub use person::Interrupt;
pub(crate) use person::KeyedAnswer;
pub(crate) use person::Reply;
pub use rag_graph::{RagGraph, RagLimits};
pub use request::{Mode, RunRequest, ValidationError};
pub(crate) use response::{status_from, status_of};
pub use response::{Approval, Metadata, RunError, RunResponse, RunStatus, Tokens, WaitingFor};
pub(crate) use run_events::{Counters, Events, RunEvent};
pub(crate) use speculating::SpeculationStats;
pub(crate) use state::{BestEffortReason, CitedPassage, Outcome};
pub use state::{ForkedFrom, RagState};
pub(crate) use thread::{validate_id as validate_thread_id, PastTurn, ThreadContext};
