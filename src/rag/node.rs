//! The adaptive-RAG node ids.

use crate::engine::NodeId;
use serde::{Deserialize, Serialize};

/// Every node of the adaptive-RAG graph (`decide_to_generate` is the router after grading).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RagNode {
    /// Choose knowledge base, web search or the model alone.
    RouteQuestion,
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

impl NodeId for RagNode {
    fn name(self) -> &'static str {
        match self {
            RagNode::RouteQuestion => "route_question",
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
