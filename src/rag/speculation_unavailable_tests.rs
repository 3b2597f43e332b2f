//! A model that stays unavailable after its retries: a speculative branch the route made moot
//! is abandoned, and a run with something to answer with ends `best_effort`
//! (`model_unavailable`) instead of failing; exact calls and steps.

use super::tests::{request, run, run_with_web, script};
use super::web_tests::OnePage;
use crate::config::Speculation;
use crate::llm::{LlmError, ScriptedModel, Task};
use crate::rag::RunRequest;
use std::time::Duration;

/// `request()` retrieving one document, so a failing grade is called exactly 1 + 1 times.
fn one_document() -> RunRequest {
    let mut request = request();
    request.n_retrieved_documents = 1;
    request
}

fn timed_out() -> LlmError {
    LlmError::Timeout {
        after: Duration::from_secs(30),
    }
}

#[tokio::test]
async fn a_grading_that_fails_is_abandoned_when_the_route_is_web_search() {
    let model = script("web_search", &[]).fail(Task::GradeDocuments, timed_out());
    let web = Some(std::sync::Arc::new(OnePage) as _);
    let r = run_with_web(model, 0, Speculation::On, one_document(), web).await;
    assert_ne!(
        r.response.status,
        crate::rag::RunStatus::Failed,
        "{:?}",
        r.response.error
    );
    assert_eq!(
        r.steps(),
        [
            "kg_retrieval",
            "route_question",
            "grade_documents",
            "generate",
            "web_search",
            "generate",
            "grade_hallucinations",
            "grade_answer"
        ]
    );
    assert_eq!(
        [Task::RouteQuery, Task::GradeDocuments, Task::GenerateAnswer].map(|t| r.calls(t)),
        [1, 2, 2],
        "the grade and its one retry; the discarded answer and the one after web search"
    );
    let grading = &r.response.workflow_steps[2].details;
    assert_eq!(grading["abandoned"], true, "{grading}");
    assert!(
        grading["error"].as_str().unwrap().contains("timed out"),
        "{grading}"
    );
}

#[tokio::test]
async fn a_model_down_after_its_retries_ends_best_effort_quoting_the_documents() {
    let model = script("kg_retrieval", &[]).fail(Task::GradeDocuments, timed_out());
    let r = run(model, 0, Speculation::Off, one_document()).await;
    let response = &r.response;
    assert_eq!(response.status, crate::rag::RunStatus::BestEffort);
    assert_eq!(
        response.metadata.limits_hit,
        [crate::rag::LimitHit::ModelUnavailable]
    );
    assert_eq!(r.steps(), ["route_question", "kg_retrieval"]);
    assert_eq!(
        [Task::RouteQuery, Task::GradeDocuments, Task::GenerateAnswer].map(|t| r.calls(t)),
        [1, 2, 0]
    );
    assert!(
        response.answer.contains("Phytophthora"),
        "{}",
        response.answer
    );
    assert_eq!(response.citations.len(), 1);

    // With nothing found yet to answer from, the failure stays a (resumable) failure.
    let model = ScriptedModel::new().fail(Task::RouteQuery, timed_out());
    let r = run(model, 0, Speculation::Off, one_document()).await;
    assert_eq!(r.response.status, crate::rag::RunStatus::Failed);
    assert_eq!(r.calls(Task::RouteQuery), 2);
}

#[tokio::test]
async fn a_speculative_answer_under_the_floor_twice_is_replaced_by_the_quote() {
    // The answer echoes the prompt's structure: asked once more, then quoted, on the
    // speculative branch as on `generate`.
    let echo = "Documents:\n[1] Patch canker\nQuestion: What causes patch canker in durian?";
    let model = ScriptedModel::new()
        .reply(
            Task::RouteQuery,
            serde_json::json!({ "data_source": "kg_retrieval" }),
        )
        .reply(
            Task::GradeDocuments,
            serde_json::json!({ "binary_score": "yes" }),
        )
        .raw(Task::GenerateAnswer, echo);
    let r = run(model, 0, Speculation::On, one_document()).await;
    let response = &r.response;
    assert_eq!(response.status, crate::rag::RunStatus::BestEffort);
    assert_eq!(
        response.metadata.limits_hit,
        [crate::rag::LimitHit::ModelUnusable]
    );
    assert!(
        !response.answer.contains("Question:"),
        "{}",
        response.answer
    );
    assert!(
        response.answer.contains("Phytophthora"),
        "{}",
        response.answer
    );
    assert_eq!(
        [
            Task::RouteQuery,
            Task::GradeDocuments,
            Task::GenerateAnswer,
            Task::GradeHallucinations
        ]
        .map(|t| r.calls(t)),
        [1, 1, 2, 0]
    );
    assert_eq!(response.metadata.speculation.used, 1);
    assert_eq!(
        r.steps(),
        [
            "kg_retrieval",
            "route_question",
            "grade_documents",
            "generate"
        ]
    );
    let answer = &response.workflow_steps[3].details;
    assert_eq!(answer["fallback"], "extractive", "{answer}");
    assert_eq!(answer["error"], "the answer repeats the prompt (twice)");
}

#[tokio::test]
async fn a_rewrite_that_stays_malformed_after_every_passage_was_set_aside_quotes_them() {
    // Every passage graded irrelevant (no clear match), then the rewrite stays malformed: the
    // grades of a model that then failed are not trusted, and the quote draws on the passages
    // they set aside instead of the run failing.
    let malformed = LlmError::Malformed {
        schema: "refine_query",
        attempts: 2,
        error: "expected value".into(),
        excerpt: "avez? $1000000000".into(),
    };
    let model = ScriptedModel::new()
        .reply(
            Task::RouteQuery,
            serde_json::json!({ "data_source": "kg_retrieval" }),
        )
        .reply(
            Task::GradeDocuments,
            serde_json::json!({ "binary_score": "no" }),
        )
        .fail(Task::RefineQuery, malformed);
    let mut vague = RunRequest::new("Tell me about durian trees.");
    vague.n_retrieved_documents = 2;
    let r = run(model, 0, Speculation::Off, vague).await;
    let response = &r.response;
    assert_eq!(response.status, crate::rag::RunStatus::BestEffort);
    assert_eq!(
        response.metadata.limits_hit,
        [crate::rag::LimitHit::ModelUnavailable]
    );
    assert_eq!(response.citations.len(), 2, "{:?}", response.citations);
    assert!(
        response.answer.to_lowercase().contains("durian"),
        "{}",
        response.answer
    );
    assert_eq!(
        [Task::RouteQuery, Task::GradeDocuments, Task::RefineQuery].map(|t| r.calls(t)),
        [1, 2, 1]
    );
}
