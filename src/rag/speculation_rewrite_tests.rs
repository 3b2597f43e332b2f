//! The loops that speculation meets after its join, with exact counts: a rewrite that finds
//! the same passages ends the rewrite loop, the model alone is not taken over a clear match
//! the search found, a passage the speculative answer stands on is not graded away, and an
//! answer from memory over passages every grade rejected leaves the grades standing.

use super::tests::{request, run, script, ANSWER, USED, VAGUE};
use crate::config::Speculation;
use crate::llm::{ScriptedModel, Task};
use crate::rag::RunRequest;
use serde_json::json;

/// A model that routes to the knowledge base, grades every passage irrelevant, rewrites with
/// `rewrite` (its reply, under the key that says what kind it is) and answers `answer`, which
/// both checks pass.
fn rejecting(rewrite: serde_json::Value, answer: &str) -> ScriptedModel {
    ScriptedModel::new()
        .reply(Task::RouteQuery, json!({ "data_source": "kg_retrieval" }))
        .reply(Task::GradeDocuments, json!({ "binary_score": "no" }))
        .reply(Task::RefineQuery, rewrite)
        .raw(Task::GenerateAnswer, answer)
        .reply(Task::GradeHallucinations, json!({ "binary_score": "yes" }))
        .reply(Task::GradeAnswer, json!({ "binary_score": "yes" }))
}

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
    assert_eq!(r.steps(), USED);
    assert_eq!(m.model_calls, 7);
    assert_eq!(r.counters(), (1, 1, 0));
    assert!(!r.response.citations.is_empty());
    // Small talk needs no documents, whatever the search found.
    assert!(crate::llm::needs_no_documents("Hello, thanks!"));
}

#[tokio::test]
async fn a_rewrite_that_finds_the_same_passages_ends_the_loop_early() {
    // Every rewrite repeats the question: the first finds what the question found, so no
    // second or third rewrite is asked for and those passages are not graded again.
    let model = || rejecting(json!({ "refined_question": VAGUE }), "Scripted answer [1].");
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
    // model is doubted. No rewrite; the answer is written again from the kept passage (kept
    // for the answer's sake, not by the model's grade, so the first answer is not taken).
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
    assert_eq!(r.counters(), (1, 0, 1));
    assert_eq!(r.response.workflow_steps[4].details["documents"], 1);
    assert_eq!(r.response.citations.len(), 1);
    assert!(m.limits_hit.is_empty(), "{:?}", m.limits_hit);
}

#[tokio::test]
async fn a_passage_the_answer_stands_on_that_is_no_clear_match_keeps_its_no() {
    // The answer, written from the passages at once, repeats the first one; but nothing the
    // question asks for is rare in it (no clear match): a model paraphrases what it is given,
    // so the grader's no stands. One rewrite, which finds the same passages: the web fallback.
    let answer = "Durian is a tall tropical fruit tree of Southeast Asia grown for its large \
                  spiny fruit [1].";
    let model = rejecting(json!({ "refined_question": VAGUE }), answer);
    let r = run(model, 0, Speculation::On, RunRequest::new(VAGUE)).await;
    let m = &r.response.metadata;
    let grading = &r.response.workflow_steps[2];
    assert_eq!(grading.details["relevant"], 0);
    assert!(grading.details.get("overruled").is_none());
    assert_eq!(r.calls(Task::RefineQuery), 1);
    assert_eq!(r.calls(Task::GradeDocuments), 3);
    assert_eq!(r.counters(), (1, 0, 1));
    // Route, 3 grades, the discarded answer, 1 rewrite, the answer without sources.
    assert_eq!(m.model_calls, 7);
    assert!(m.web_fallback);
    assert_eq!(m.limits_hit, [crate::rag::LimitHit::NoSources]);
}

#[tokio::test]
async fn a_clear_match_for_the_models_own_answer_is_kept_against_its_no() {
    // The grader rejects every passage. The rewrite, written as the first sentence of a
    // document that answers (`answer`), finds a clear match for its words: the model said
    // what an answering document holds, then rejected it, so the passage is kept and the
    // answer is written from it. No second rewrite, no web search. The same words sent as
    // search words (`refined_question`) claim nothing: the seeds' loop runs on
    // (`rewrites_and_the_web_fallback_cost_one_discarded_answer`).
    let rewrite = "Psyllid nymphs suck the sap of young durian leaves and curl them.";
    let model = || rejecting(json!({ "answer": rewrite }), "Scripted answer [1].");
    for on in [Speculation::Off, Speculation::On] {
        let r = run(model(), 0, on, RunRequest::new(VAGUE)).await;
        let m = &r.response.metadata;
        assert_eq!(r.calls(Task::RefineQuery), 1, "{on:?}");
        assert_eq!(
            r.calls(Task::GradeDocuments),
            6,
            "{on:?}: two gradings of 3"
        );
        let grading = &r
            .response
            .workflow_steps
            .iter()
            .rev()
            .find(|s| s.name == crate::rag::RagNode::GradeDocuments)
            .unwrap();
        assert_eq!(
            grading.details["overruled"][0]["rule"], "rewrites_find",
            "{on:?}"
        );
        assert!(!m.web_fallback, "{on:?}");
        assert!(m.limits_hit.is_empty(), "{on:?}: {:?}", m.limits_hit);
        assert_eq!(r.response.citations.len(), 1, "{on:?}");
        assert!(r.response.citations[0].url.contains("psyllid"), "{on:?}");
        // Route, 2 x 3 grades, 1 rewrite, the answer, its 2 checks (and, speculating, the
        // discarded first answer).
        let speculative = u32::from(on == Speculation::On);
        assert_eq!(m.model_calls, 11 + speculative, "{on:?}");
    }
}

#[tokio::test]
async fn a_document_named_like_the_tool_the_models_rewrite_names_is_kept_against_its_no() {
    // The grader rejects every passage. The rewrite, written as the first sentence of a
    // document that answers, names a document in code (`mealybugs`, the file mealybugs.md)
    // and finds it: the model said which document answers, then rejected it, so its passage
    // is kept (`rewrite_names`) and the answer is written from it. No second rewrite, no web
    // search.
    let rewrite = "See `mealybugs` for the white waxy insects on the fruit stalks.";
    let model = || rejecting(json!({ "answer": rewrite }), "Scripted answer [1].");
    for on in [Speculation::Off, Speculation::On] {
        let r = run(model(), 0, on, RunRequest::new(VAGUE)).await;
        let m = &r.response.metadata;
        let grading = (r.response.workflow_steps.iter().rev())
            .find(|s| s.name == crate::rag::RagNode::GradeDocuments)
            .unwrap();
        let rules: Vec<&str> = (grading.details["overruled"].as_array().unwrap().iter())
            .map(|o| o["rule"].as_str().unwrap())
            .collect();
        assert!(rules.contains(&"rewrite_names"), "{on:?}: {rules:?}");
        assert_eq!(r.calls(Task::RefineQuery), 1, "{on:?}");
        assert_eq!(r.calls(Task::GradeDocuments), 6, "{on:?}");
        assert!(!m.web_fallback, "{on:?}");
        assert!(m.limits_hit.is_empty(), "{on:?}: {:?}", m.limits_hit);
        assert!(
            (r.response.citations.iter()).all(|c| c.url.contains("mealybugs")),
            "{on:?}"
        );
        // Route, 2 x 3 grades, 1 rewrite, the answer, its 2 checks (and, speculating, the
        // discarded first answer).
        assert_eq!(
            m.model_calls,
            11 + u32::from(on == Speculation::On),
            "{on:?}"
        );
    }
}

#[tokio::test]
async fn a_models_answer_that_finds_the_passages_it_rejected_keeps_their_clear_match() {
    // The grader rejects every passage, the clear match among them too (a model not yet
    // doubted keeps its verdicts). The rewrite, written as an answer in the question's own
    // words, finds the same passages, the clear match among them. They are not graded again
    // (no calls), the clear match is kept, and the answer is written from it: no web search.
    // Under search words the same rewrite ends the loop with the web fallback.
    let model = |key: &str| rejecting(json!({ key: request().question }), ANSWER);
    let words = run(model("search_words"), 0, Speculation::Off, request()).await;
    assert!(words.response.metadata.web_fallback);
    assert_eq!(words.calls(Task::GradeDocuments), 3);
    assert_eq!(
        words.response.metadata.model_calls, 9,
        "route, 3 grades, 1 rewrite, the answer from memory, the answer again from the \
         passages its words found, its 2 checks"
    );
    let r = run(model("answer"), 0, Speculation::Off, request()).await;
    let m = &r.response.metadata;
    let second = (r.response.workflow_steps.iter())
        .filter(|s| s.name == crate::rag::RagNode::KgRetrieval)
        .nth(1)
        .unwrap();
    assert_eq!(
        second.details["same_passages"], true,
        "{:?}",
        second.details
    );
    assert_eq!(second.details["overruled"][0]["rule"], "rewrites_find");
    assert_eq!(r.calls(Task::GradeDocuments), 3, "one grading");
    assert_eq!(r.calls(Task::RefineQuery), 1);
    assert!(!m.web_fallback);
    assert!(m.limits_hit.is_empty(), "{:?}", m.limits_hit);
    assert!(!r.response.citations.is_empty());
    // Route, 3 grades, 1 rewrite, the answer, its 2 checks.
    assert_eq!(m.model_calls, 8);
}

#[tokio::test]
async fn an_answer_from_memory_over_passages_every_grade_rejected_leaves_the_grades_standing() {
    // The grader rejects every passage, its clear match too; the speculative answer, twice,
    // says what no passage holds (from memory). The two agree that the passages do not
    // answer: the model is not doubted, its grades stand, and the run rewrites the query
    // (the rewrite finds the same passages, so the loop ends with the web fallback). An
    // answer under the floor for being broken (here, a row of citations) doubts the model,
    // whose grades then yield to the clear match.
    const MEMORY: &str = "Volcanic ash from distant eruptions makes purple glowing sunsets \
                          over the northern Martian deserts every autumn evening.";
    let model = |answer: &str| rejecting(json!({ "search_words": request().question }), answer);
    let r = run(model(MEMORY), 0, Speculation::On, request()).await;
    let m = &r.response.metadata;
    assert_eq!(
        r.steps(),
        [
            "kg_retrieval",
            "route_question",
            "grade_documents",
            "generate",
            "transform_query",
            "kg_retrieval",
            "web_search",
            "generate"
        ]
    );
    assert!(m.web_fallback);
    assert_eq!(m.limits_hit, [crate::rag::LimitHit::NoSources]);
    assert_eq!(r.calls(Task::GradeDocuments), 3);
    assert_eq!(
        m.model_calls, 8,
        "route, 3 grades, 2 answers from memory, 1 rewrite, the answer without sources"
    );
    let broken = run(model("[1] [2] [3]"), 0, Speculation::On, request()).await;
    let b = &broken.response.metadata;
    assert_eq!(
        broken.steps(),
        [
            "kg_retrieval",
            "route_question",
            "grade_documents",
            "generate",
            "generate"
        ]
    );
    assert_eq!(broken.calls(Task::RefineQuery), 0);
    assert_eq!(b.limits_hit, [crate::rag::LimitHit::ModelUnusable]);
    assert_eq!(
        b.model_calls, 8,
        "route, 3 grades, 2 speculative answers, 2 answers from the clear match kept"
    );
}
