//! The sample run the crash, sweeper and fault tests start from: its question, the six steps
//! of its happy path in order, and the EventBridge schedule event that starts a sweep.

use serde_json::Value;

/// A question the bundled knowledge base answers: it routes to `kg_retrieval`.
pub const QUESTION: &str = "What causes patch canker in durian?";

/// The six steps of the happy path, in order.
pub const STEPS: [&str; 6] = [
    "route_question",
    "kg_retrieval",
    "grade_documents",
    "generate",
    "grade_hallucinations",
    "grade_answer",
];

/// The same six steps with speculation on (the default): the fork's branches are recorded
/// after the retrieval that starts it, in declared order.
pub const SPECULATED_STEPS: [&str; 6] = [
    "kg_retrieval",
    "route_question",
    "grade_documents",
    "generate",
    "grade_hallucinations",
    "grade_answer",
];

/// The scheduled event that invokes the sweeper (`events/eventbridge-schedule.json`).
pub fn schedule() -> Value {
    serde_json::from_str(include_str!("../../events/eventbridge-schedule.json"))
        .expect("event JSON")
}
