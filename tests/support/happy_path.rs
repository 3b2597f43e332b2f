//! The sample run the crash, sweeper and fault tests start from: its question, the six steps
//! of its happy path in order, and the EventBridge schedule event that starts a sweep.

use serde_json::Value;

/// A question the bundled knowledge base answers: it routes to `kg_retrieval`.
pub const QUESTION: &str = "What causes patch canker in durian?";

/// A question every passage of the sample matches about as well: no clear match.
pub const VAGUE: &str = "Tell me about durian trees.";

/// Rewrites of [`VAGUE`] that each retrieve other passages of the sample: a grader that
/// rejects every passage meets the rewrite loop's limit, not its early end (a rewrite that
/// retrieves the same passages as the search before it).
pub const REWRITES: [&str; 3] = [
    "durian fruit borer larvae",
    "psyllid nymphs on durian leaves",
    "mealybugs wax on durian fruit",
];

/// Rewrites of the sample question that each still find its documents, and other ones.
pub const CANKER_REWRITES: [&str; 3] = [
    "durian patch canker cause Phytophthora",
    "patch canker bark lesions gum",
    "patch canker trunk injection phosphonate",
];

/// The first source a run's first knowledge-base retrieval found (its `kg_retrieval` step).
pub fn first_retrieved(run: &Value) -> &Value {
    let steps = run["workflow_steps"].as_array().expect("workflow_steps");
    let retrieval = steps.iter().find(|s| s["name"] == "kg_retrieval");
    &retrieval.expect("a kg_retrieval step")["details"]["sources"][0]
}

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
