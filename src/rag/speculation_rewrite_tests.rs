//! The loops that speculation meets after its join, with exact counts: a rewrite that finds
//! the same passages ends the rewrite loop, the model alone is not taken over a clear match
//! the search found, and a passage the speculative answer stands on is not graded away.

use super::tests::{request, run, script, VAGUE};
use crate::config::Speculation;
use crate::llm::{ScriptedModel, Task};
use crate::rag::RunRequest;
use serde_json::json;

#[tokio::test]
async fn the_model_alone_is_not_taken_over_a_clear_match_the_search_found() {
    // The durian question's search finds its clear match: routed to the model alone, the run
    // answers from the knowledge base, and the speculative answer is the answer.
    let r = run(
        script("llm_internal", &["yes"]),
        5,
        Speculation::On,
        request(),
    )
    .await;
    let m = &r.response.metadata;
    assert!(m.route_overruled);
    assert_eq!(m.route, Some(crate::llm::DataSource::KgRetrieval));
    assert_eq!(
        r.steps(),
        [
            "kg_retrieval",
            "route_question",
            "grade_documents",
            "generate",
            "grade_hallucinations",
            "grade_answer"
        ]
    );
    assert_eq!(m.model_calls, 7);
    assert_eq!((m.speculation.used, m.speculation.discarded), (1, 0));
    assert!(!r.response.citations.is_empty());
    // Small talk needs no documents, whatever the search found.
    assert!(crate::llm::needs_no_documents("Hello, thanks!"));
}

#[tokio::test]
async fn a_rewrite_that_finds_the_same_passages_ends_the_loop_early() {
    // Every rewrite repeats the question: the first finds what the question found, so no
    // second or third rewrite is asked for and those passages are not graded again.
    let model = || {
        ScriptedModel::new()
            .reply(Task::RouteQuery, json!({ "data_source": "kg_retrieval" }))
            .reply(Task::GradeDocuments, json!({ "binary_score": "no" }))
            .reply(Task::RefineQuery, json!({ "refined_question": VAGUE }))
            .raw(Task::GenerateAnswer, "Scripted answer [1].")
            .reply(Task::GradeHallucinations, json!({ "binary_score": "yes" }))
            .reply(Task::GradeAnswer, json!({ "binary_score": "yes" }))
    };
    for on in [Speculation::Off, Speculation::On] {
        let r = run(model(), 0, on, RunRequest::new(VAGUE)).await;
        let m = &r.response.metadata;
        assert_eq!(r.calls(Task::RefineQuery), 1, "{on:?}");
        assert_eq!(m.query_transformation_retry_count, 1);
        assert_eq!(
            r.calls(Task::GradeDocuments),
            3,
            "one grading of the passages"
        );
        assert!(m.web_fallback);
        let retrieval = r
            .response
            .workflow_steps
            .iter()
            .filter(|s| s.name == crate::rag::RagNode::KgRetrieval)
            .nth(1)
            .unwrap();
        assert_eq!(retrieval.details["same_passages"], true);
        assert_eq!(retrieval.details["decision"], "web_search_fallback");
        // route, 3 grades, 1 rewrite, the answer without sources (and, speculating, the
        // discarded first answer).
        let speculative = u32::from(on == Speculation::On);
        assert_eq!(m.model_calls, 6 + speculative, "{on:?}");
        assert_eq!(m.limits_hit, [crate::rag::LimitHit::NoSources]);
    }
}

#[tokio::test]
async fn a_passage_graded_irrelevant_that_the_speculative_answer_stands_on_is_kept() {
    // The model rejects every passage, yet its answer, written from them at the same time,
    // stands on the first: the words side with the answer, the grade is overruled, and the
    // model is doubted. No rewrite; the answer is written again from the kept passage.
    let r = run(
        script("kg_retrieval", &["no"]),
        0,
        Speculation::On,
        request(),
    )
    .await;
    let m = &r.response.metadata;
    assert_eq!(r.calls(Task::RefineQuery), 0);
    assert_eq!(m.query_transformation_retry_count, 0);
    assert_eq!(
        r.steps(),
        [
            "kg_retrieval",
            "route_question",
            "grade_documents",
            "generate",
            "generate",
            "grade_hallucinations",
            "grade_answer"
        ]
    );
    // Route, 3 grades, the speculative answer, the answer, both checks.
    assert_eq!(m.model_calls, 8);
    assert_eq!(r.response.workflow_steps[4].details["documents"], 1);
    assert_eq!(r.response.citations.len(), 1);
    assert!(m.limits_hit.is_empty(), "{:?}", m.limits_hit);
}
