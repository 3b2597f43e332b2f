//! The adaptive-RAG node ids.

use crate::engine::NodeId;
use serde::{Deserialize, Serialize};

/// Every node of the adaptive-RAG graph (`decide_to_generate` is the router after grading).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RagNode {
    /// Rewrite a thread's follow-up to stand alone (only when the thread has earlier turns).
    ContextualizeQuestion,
    /// Ask what a question's reference means, and wait (only when nothing names it:
    /// `CLARIFY`).
    Clarify,
    /// Choose knowledge base, web search or the model alone.
    RouteQuestion,
    /// Route, grade and answer at once over the passages found first (an engine fork whose
    /// branches are `route_question`, `grade_documents` and `generate`; never a step itself).
    Speculate,
    /// Search the knowledge base.
    KgRetrieval,
    /// Keep the relevant documents, then `decide_to_generate`.
    GradeDocuments,
    /// Rewrite the query.
    TransformQuery,
    /// Search the web (a route, or the fallback once rewrites are exhausted).
    WebSearch,
    /// Write the answer.
    Generate,
    /// Is the answer grounded in the documents?
    GradeHallucinations,
    /// Does the answer resolve the question?
    GradeAnswer,
}

impl RagNode {
    /// The node's name, as step records, events and logs show it.
    pub fn as_str(self) -> &'static str {
        match self {
            RagNode::ContextualizeQuestion => "contextualize_question",
            RagNode::Clarify => "clarify",
            RagNode::RouteQuestion => "route_question",
            RagNode::Speculate => "speculate",
            RagNode::KgRetrieval => "kg_retrieval",
            RagNode::GradeDocuments => "grade_documents",
            RagNode::TransformQuery => "transform_query",
            RagNode::WebSearch => "web_search",
            RagNode::Generate => "generate",
            RagNode::GradeHallucinations => "grade_hallucinations",
            RagNode::GradeAnswer => "grade_answer",
        }
    }
}

impl NodeId for RagNode {
    fn name(self) -> &'static str {
        self.as_str()
    }
}

impl std::fmt::Display for RagNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Compares with a node's name, as callers reading a response do.
impl PartialEq<&str> for RagNode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Compares with a node's name, as callers reading a response do.
impl PartialEq<str> for RagNode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::FailedAt;

    const ALL: [RagNode; 10] = [
        RagNode::ContextualizeQuestion,
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

    /// Checkpoints and responses serialise nodes with serde and show them with `name`: both
    /// must agree, or a stored failure would not read back.
    #[test]
    fn serialised_names_are_the_shown_names() {
        for node in ALL {
            let wire = serde_json::to_value(node).unwrap();
            assert_eq!(wire, node.name());
            let failed: FailedAt<RagNode> = serde_json::from_value(wire.clone()).unwrap();
            assert_eq!(failed, FailedAt::Node(node));
            assert_eq!(serde_json::to_value(failed).unwrap(), wire);
        }
        let queue: FailedAt<RagNode> = serde_json::from_str("\"queue\"").unwrap();
        assert_eq!(queue, FailedAt::Queue);
        assert_eq!(serde_json::to_string(&queue).unwrap(), "\"queue\"");
    }
}
