//! The adaptive-RAG graph's shape, hashed into the workflow version every checkpoint records
//! (see [`crate::engine::Versioning`]).
//!
//! Changing an edge here, a node in [`RagNode`], or [`STATE_FORMAT`] changes the version, so
//! runs suspended by the previous deployment end `failed` (re-submit) instead of resuming into
//! the wrong node. When a change keeps old checkpoints meaningful, declare it with
//! [`RagGraph::resuming_from`] instead.

use super::RagNode;
use crate::engine::{NodeId, Shape, Versioning, WorkflowVersion};

/// The stored form of [`super::RagState`]: bump it when a field changes meaning (a new
/// `#[serde(default)]` field does not need it).
pub(crate) const STATE_FORMAT: u32 = 1;

/// Every node, in declaration order.
pub(super) const NODES: [RagNode; 11] = [
    RagNode::ContextualizeQuestion,
    RagNode::Clarify,
    RagNode::RouteQuestion,
    RagNode::Speculate,
    RagNode::KgRetrieval,
    RagNode::GradeDocuments,
    RagNode::TransformQuery,
    RagNode::WebSearch,
    RagNode::Generate,
    RagNode::GradeHallucinations,
    RagNode::GradeAnswer,
];

/// Every transition a step may choose (`nodes.rs`); `end` is the end of the run.
pub(super) const EDGES: [(&str, &str); 41] = [
    ("start", "route_question"),
    // a thread's follow-up (issue 15), then the run's entry
    ("start", "contextualize_question"),
    ("contextualize_question", "route_question"),
    ("contextualize_question", "kg_retrieval"),
    // asking back (issue 49): the question's subject first, then the run's entry
    ("start", "clarify"),
    ("clarify", "route_question"),
    ("clarify", "kg_retrieval"),
    // speculation (issue 17): retrieve first, then route, grade and answer as branches
    ("start", "kg_retrieval"),
    ("kg_retrieval", "speculate"),
    ("speculate", "web_search"),
    ("speculate", "generate"),
    ("speculate", "transform_query"),
    ("speculate", "grade_hallucinations"),
    ("speculate", "grade_answer"),
    ("speculate", "end"),
    ("route_question", "kg_retrieval"),
    ("route_question", "web_search"),
    ("route_question", "generate"),
    // kg_retrieval decides itself when documents are not graded
    ("kg_retrieval", "grade_documents"),
    ("kg_retrieval", "generate"),
    ("kg_retrieval", "transform_query"),
    ("kg_retrieval", "web_search"),
    ("grade_documents", "generate"),
    ("grade_documents", "transform_query"),
    ("grade_documents", "web_search"),
    ("transform_query", "kg_retrieval"),
    ("transform_query", "web_search"),
    ("transform_query", "generate"),
    ("web_search", "generate"),
    // web search not approved (issue 49): a question routed to the web goes to the kb
    ("web_search", "kg_retrieval"),
    ("generate", "grade_hallucinations"),
    ("generate", "grade_answer"),
    ("generate", "end"),
    // an answer from memory, asked for again from the passages its words found; an answer
    // saying its passages do not answer, as when none is relevant (issue 46)
    ("generate", "generate"),
    ("generate", "transform_query"),
    ("generate", "web_search"),
    ("grade_hallucinations", "generate"),
    ("grade_hallucinations", "grade_answer"),
    ("grade_hallucinations", "end"),
    ("grade_answer", "transform_query"),
    ("grade_answer", "end"),
];

/// The version a checkpoint without one is taken to have: the graph as it was when versions
/// started being recorded, which is the graph that wrote every such checkpoint. While the
/// shape is unchanged this equals [`current`], so those runs resume; once it changes they end
/// `failed` like any other run of an older version.
const UNVERSIONED: &str = "0fac2f0550b069b4";
/// The graph before a person could be in the loop (issue 49): every node and edge of it is in
/// this one, with the same meaning, so its runs resume.
const BEFORE_INTERRUPTS: &str = "9286fd646b9c8e01";
/// The graph before an answer could lead back to `generate`, `transform_query` or
/// `web_search` (issue 46): every node and edge of it is in this one, with the same meaning.
const BEFORE_ANSWER_RESEARCH: &str = "10c4cebf2cefd640";

/// The version of this build's graph.
pub(crate) fn current() -> WorkflowVersion {
    let nodes = NODES.map(NodeId::name);
    Shape {
        nodes: &nodes,
        edges: &EDGES,
        state_format: STATE_FORMAT,
    }
    .version()
}

/// The versioning of this build: its own version, and unversioned checkpoints as
/// [`UNVERSIONED`].
///
/// This build also resumes [`UNVERSIONED`]'s runs: it only added nodes and edges to that
/// graph (`contextualize_question` before the entry, and speculation's `kg_retrieval` →
/// `speculate`), so every node such a checkpoint can be at still exists with the same
/// transitions, and its state reads with the same meaning (the new fields default to none).
pub(crate) fn versioning() -> Versioning {
    let mut versioning = Versioning::new(current(), WorkflowVersion::new(UNVERSIONED));
    versioning
        .resumes_from
        .push(WorkflowVersion::new(UNVERSIONED));
    versioning
        .resumes_from
        .push(WorkflowVersion::new(BEFORE_INTERRUPTS));
    versioning
        .resumes_from
        .push(WorkflowVersion::new(BEFORE_ANSWER_RESEARCH));
    versioning
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails when the graph's shape changes: decide then whether runs suspended by the
    /// previous deployment may resume ([`RagGraph::resuming_from`]) or must be re-submitted,
    /// and update the pinned value. [`UNVERSIONED`] stays the shape of the first versioned
    /// release.
    #[test]
    fn the_shape_is_pinned() {
        assert_eq!(current().as_str(), "eba5c1669813fc54");
        assert_eq!(versioning().check(None), Ok(()));
        let first = WorkflowVersion::new(UNVERSIONED);
        assert_eq!(versioning().check(Some(&first)), Ok(()));
        let before = WorkflowVersion::new(BEFORE_INTERRUPTS);
        assert_eq!(versioning().check(Some(&before)), Ok(()));
        let before = WorkflowVersion::new(BEFORE_ANSWER_RESEARCH);
        assert_eq!(versioning().check(Some(&before)), Ok(()));
    }

    #[test]
    fn every_node_appears_in_an_edge() {
        for node in NODES {
            assert!(EDGES
                .iter()
                .any(|(a, b)| *a == node.name() || *b == node.name()));
        }
    }
}
