//! What a run of the workflow checkpoints after every step: the engine's checkpoint of the
//! adaptive-RAG state and nodes.

use super::node::RagNode;
use super::state::RagState;
use crate::engine::Checkpoint;

/// A run checkpoint of the adaptive-RAG graph.
pub type RagCheckpoint = Checkpoint<RagState, RagNode>;
