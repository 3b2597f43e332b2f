//! The loops are bounded: exact numbers of model calls, steps and retries, driven through the
//! OpenAI-compatible client and the Bedrock client against scripted servers on loopback (one
//! script, the same scenarios and counts for both) and the embedded knowledge base.

use crate::support;

use crate::for_each_provider;
use bounded_rag::clock::{Clock, FakeClock, SystemClock};
use bounded_rag::engine::Budget;
use bounded_rag::rag::{RunRequest, RunStatus};
use std::time::Duration;
use support::bedrock_server::exception;
use support::happy_path::{CANKER_REWRITES, QUESTION, REWRITES, STEPS, VAGUE};
use support::llm_server::{Reply, Script};
use support::providers::{steps, Harness, Provider};

for_each_provider!(
    happy_path_makes_one_call_per_step_and_grades_each_document,
    irrelevant_documents_give_exactly_three_rewrites_then_one_web_search,
    always_ungrounded_answer_stops_after_exactly_three_regenerations,
    never_useful_answer_ends_best_effort_after_three_rewrites,
    recursion_limit_of_five_ends_gracefully_with_the_best_answer_so_far,
    two_server_errors_then_success_succeed_without_a_visible_retry,
    throttling_and_a_model_not_ready_are_retried_silently,
    a_bad_request_is_called_once_and_fails_with_a_clear_status,
    access_denied_is_called_once_and_says_what_to_fix,
    malformed_json_gets_one_bounded_reask,
    speed_mode_skips_every_grading_call,
    llm_internal_route_answers_without_context_or_citations,
    token_budget_ends_best_effort_before_a_node_that_cannot_fit,
    a_node_whose_estimate_cannot_fit_is_not_started,
    every_call_carries_its_output_cap,
    an_answer_cut_at_its_cap_is_kept_and_ends_best_effort_answer_length,
    an_answer_model_that_stays_down_is_replaced_by_a_quote_of_the_documents,
    an_answer_refused_for_authentication_fails_loudly_without_a_quote,
);

async fn happy_path_makes_one_call_per_step_and_grades_each_document(provider: Provider) {
    let h = Harness::new(provider, Script::defaults()).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.status, RunStatus::Completed);
    assert!(r.success);
    assert_eq!(steps(&r), STEPS);
    assert_eq!(h.calls("route_query"), 1);
    assert_eq!(
        h.calls("grade_documents"),
        3,
        "one grade per retrieved document"
    );
    assert_eq!(h.calls("generate_answer"), 1);
    assert_eq!(h.calls("grade_hallucinations"), 1);
    assert_eq!(h.calls("grade_answer"), 1);
    assert_eq!(h.llm.total_calls(), 7);
    assert_eq!(r.metadata.model_calls, 7);
    // The answer check is asked together with the groundedness check, in the same step;
    // grade_answer then uses that verdict and calls nothing.
    let details = |name: &str| {
        r.workflow_steps
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.details.clone())
            .unwrap()
    };
    assert_eq!(details("grade_hallucinations")["model_calls"], 2);
    assert_eq!(details("grade_hallucinations")["answer_checked"], true);
    assert_eq!(
        details("grade_answer")["asked_with"],
        "grade_hallucinations"
    );
    assert!(details("grade_answer").get("model_calls").is_none());
    assert_eq!(details("grade_documents")["model_calls"], 3);
    assert_eq!(r.answer, "Scripted answer [1].");
    // The answer stands on the one passage it cites (too short a sentence to judge: kept as
    // the model wrote it).
    assert_eq!(r.citations.len(), 1);
    assert!(r.citations.iter().all(|c| c.url.starts_with("kb://")));
    assert!(!r.citations[0].attributed);
    // the question is passed verbatim in every call about it
    for body in h.llm.requests() {
        assert!(body.to_string().contains(QUESTION), "{body}");
    }
}

async fn irrelevant_documents_give_exactly_three_rewrites_then_one_web_search(provider: Provider) {
    // A question every passage matches about as well: no clear match, which a grade of `no`
    // could not drop (the clear-match rule).
    let script = Script::defaults()
        .on("grade_documents", [Reply::no()])
        .on("refine_query", REWRITES.map(Reply::refined));
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(VAGUE), 50).await;
    assert_eq!(h.calls("refine_query"), 3);
    assert_eq!(r.metadata.query_transformation_retry_count, 3);
    assert_eq!(
        steps(&r)
            .iter()
            .filter(|s| **s == "transform_query")
            .count(),
        3
    );
    assert_eq!(
        steps(&r).iter().filter(|s| **s == "kg_retrieval").count(),
        4
    );
    assert_eq!(steps(&r).iter().filter(|s| **s == "web_search").count(), 1);
    assert_eq!(h.calls("grade_documents"), 12, "4 retrievals x 3 documents");
    assert!(r.metadata.web_fallback);
    // web search is not configured here: the fallback says so and the answer is marked
    assert!(r.metadata.web_search_unavailable);
    assert_eq!(r.status, RunStatus::BestEffort);
    assert_eq!(r.metadata.limits_hit, ["no_sources"]);
    assert!(r.answer.contains("no relevant sources"), "{}", r.answer);
}

async fn always_ungrounded_answer_stops_after_exactly_three_regenerations(provider: Provider) {
    let h = Harness::new(
        provider,
        Script::defaults().on("grade_hallucinations", [Reply::no()]),
    )
    .await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(
        h.calls("generate_answer"),
        4,
        "first answer + 3 regenerations"
    );
    assert_eq!(h.calls("grade_hallucinations"), 4);
    assert_eq!(
        h.calls("grade_answer"),
        4,
        "asked with each groundedness check; unused as no answer was grounded"
    );
    assert_eq!(r.metadata.model_calls, 1 + 3 + 4 + 4 + 4);
    assert_eq!(r.metadata.hallucination_retry_count, 3);
    assert_eq!(r.status, RunStatus::BestEffort);
    assert!(r.success);
    assert_eq!(r.metadata.limits_hit, ["max_regenerations"]);
    assert!(r.answer.starts_with("Scripted answer [1]."));
    assert!(
        r.answer.contains("could not be verified"),
        "disclaimer: {}",
        r.answer
    );
}

async fn never_useful_answer_ends_best_effort_after_three_rewrites(provider: Provider) {
    let script = Script::defaults()
        .on("grade_answer", [Reply::no()])
        .on("refine_query", CANKER_REWRITES.map(Reply::refined));
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(h.calls("refine_query"), 3);
    assert_eq!(h.calls("grade_answer"), 4);
    assert_eq!(h.calls("generate_answer"), 4);
    assert_eq!(r.metadata.query_transformation_retry_count, 3);
    assert_eq!(r.status, RunStatus::BestEffort);
    assert_eq!(r.metadata.limits_hit, ["max_retries"]);
    assert_eq!(r.metadata.total_steps, 1 + 4 * 5 + 3);
}

async fn recursion_limit_of_five_ends_gracefully_with_the_best_answer_so_far(provider: Provider) {
    let h = Harness::new(
        provider,
        Script::defaults().on("grade_answer", [Reply::no()]),
    )
    .await;
    let r = h.run(RunRequest::new(QUESTION), 5).await;
    assert_eq!(r.status, RunStatus::BestEffort);
    assert!(r.success);
    assert_eq!(r.metadata.total_steps, 5);
    assert_eq!(r.workflow_steps.len(), 5);
    assert_eq!(r.metadata.limits_hit, ["step_limit"]);
    assert!(r.answer.starts_with("Scripted answer [1]."), "{}", r.answer);
    assert!(r.answer.contains("step limit"));
    assert_eq!(steps(&r)[4], "grade_hallucinations");
    assert_eq!(
        h.calls("grade_answer"),
        1,
        "asked with the groundedness check in step 5; the grade_answer step never ran"
    );
}

async fn two_server_errors_then_success_succeed_without_a_visible_retry(provider: Provider) {
    let script = Script::defaults().on(
        "route_query",
        [
            Reply::status(500),
            Reply::status(500),
            Reply::route("kg_retrieval"),
        ],
    );
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(h.calls("route_query"), 3);
    assert_eq!(
        steps(&r).iter().filter(|s| **s == "route_question").count(),
        1
    );
    assert_eq!(r.metadata.total_steps, 6);
    assert_eq!(r.metadata.infrastructure_retries, 2);
}

async fn throttling_and_a_model_not_ready_are_retried_silently(provider: Provider) {
    // Bedrock: ThrottlingException, then ModelNotReadyException (both 429), then the reply.
    let script = Script::defaults().on(
        "route_query",
        [
            Reply::status(429),
            exception(429, "ModelNotReadyException", "the model is loading"),
            Reply::route("kg_retrieval"),
        ],
    );
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(h.calls("route_query"), 3);
    assert_eq!(h.llm.total_calls(), 3 + 6);
    assert_eq!(r.metadata.infrastructure_retries, 2);
    assert_eq!(r.metadata.model_calls, 7, "failed calls report no tokens");
    assert_eq!(r.metadata.tokens.total, 7 * 110);
}

async fn access_denied_is_called_once_and_says_what_to_fix(provider: Provider) {
    let script = Script::defaults().on(
        "grade_documents",
        [exception(403, "AccessDeniedException", "not authorized")],
    );
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(
        h.calls("grade_documents"),
        1,
        "a permanent error is never retried"
    );
    assert_eq!(h.llm.total_calls(), 2);
    assert_eq!(r.status, RunStatus::Failed);
    let error = r.error.expect("error");
    assert_eq!(error.node, "grade_documents");
    assert_eq!(error.class, bounded_rag::error::ErrorClass::Permanent);
    assert!(error.message.contains("403"), "{}", error.message);
    if matches!(provider, Provider::Bedrock) {
        assert!(
            error.message.contains("bedrock:InvokeModel") && error.message.contains("LLM_MODEL"),
            "{}",
            error.message
        );
    }
}

async fn a_bad_request_is_called_once_and_fails_with_a_clear_status(provider: Provider) {
    let script = Script::defaults().on("route_query", [Reply::status(400).body("bad model name")]);
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(h.calls("route_query"), 1);
    assert_eq!(h.llm.total_calls(), 1);
    assert_eq!(r.status, RunStatus::Failed);
    assert!(!r.success);
    let error = r.error.expect("error");
    assert_eq!(error.node, "route_question");
    assert_eq!(error.class, bounded_rag::error::ErrorClass::Permanent);
    assert!(error.message.contains("400"), "{}", error.message);
}

/// OpenAI-compatible only: Bedrock sends no `Retry-After` (its throttling is retried with the
/// policy's backoff, see `throttling_and_a_model_not_ready_are_retried_silently`).
#[tokio::test]
async fn retry_after_on_429_is_honoured() {
    let script = Script::defaults().on(
        "route_query",
        [
            Reply::status(429).retry_after("1"),
            Reply::route("kg_retrieval"),
        ],
    );
    let h = Harness::new(Provider::OpenAi, script).await;
    let clock = FakeClock::at_ms(SystemClock.now_ms());
    let wf = h.workflow().with_clock(&clock);
    let budget = Budget::new(50, clock.now_ms() + 60_000);
    let r = wf
        .run_new("r429", RunRequest::new(QUESTION), &budget)
        .await
        .unwrap();
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(h.calls("route_query"), 2);
    // the backoff window is 5 ms at most: only Retry-After explains a wait of a second
    assert_eq!(clock.sleeps().len(), 1);
    assert!(
        clock.sleeps()[0] >= Duration::from_secs(1),
        "{:?}",
        clock.sleeps()
    );
}

async fn malformed_json_gets_one_bounded_reask(provider: Provider) {
    let script = Script::defaults().on(
        "route_query",
        [Reply::raw("not json"), Reply::route("kg_retrieval")],
    );
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(h.calls("route_query"), 2);

    let h = Harness::new(
        provider,
        Script::defaults().on("route_query", [Reply::raw("still not json")]),
    )
    .await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(
        h.calls("route_query"),
        2,
        "one re-ask, then a permanent failure"
    );
    assert_eq!(r.status, RunStatus::Failed);
    assert_eq!(
        r.metadata.infrastructure_retries, 0,
        "malformed output is not retried as transient"
    );
}

async fn speed_mode_skips_every_grading_call(provider: Provider) {
    let h = Harness::new(provider, Script::defaults()).await;
    let mut request = RunRequest::new(QUESTION);
    request.mode = bounded_rag::rag::Mode::Speed;
    let r = h.run(request, 50).await;
    assert_eq!(steps(&r), ["route_question", "kg_retrieval", "generate"]);
    assert_eq!(h.llm.total_calls(), 2);
    assert_eq!(r.status, RunStatus::Completed);
}

async fn llm_internal_route_answers_without_context_or_citations(provider: Provider) {
    let h = Harness::new(
        provider,
        Script::defaults().on("route_query", [Reply::route("llm_internal")]),
    )
    .await;
    let r = h.run(RunRequest::new("Say hello"), 50).await;
    assert_eq!(steps(&r), ["route_question", "generate", "grade_answer"]);
    assert_eq!(r.status, RunStatus::Completed);
    assert!(r.citations.is_empty());
}

async fn token_budget_ends_best_effort_before_a_node_that_cannot_fit(provider: Provider) {
    // Every reply reports 100 + 10 tokens. Never grounded: after the first pass (route 110,
    // three document grades 330, generate 110, groundedness + answer check 220 = 770) each
    // regeneration round costs 110 + 220. With 1450 tokens: rounds 2 and 3 fit (1430); the
    // fourth answer (its largest use so far, 110) would pass 1450, so it is never asked.
    let h = Harness::new(
        provider,
        Script::defaults().on("grade_hallucinations", [Reply::no()]),
    )
    .await;
    let mut request = RunRequest::new(QUESTION);
    request.max_tokens = Some(1450);
    let r = h.run(request, 50).await;
    assert_eq!(r.status, RunStatus::BestEffort);
    assert!(r.success);
    assert_eq!(r.metadata.limits_hit, ["token_budget"]);
    assert_eq!(h.calls("generate_answer"), 3);
    assert_eq!(h.calls("grade_hallucinations"), 3);
    assert_eq!(h.calls("grade_answer"), 3);
    assert_eq!(h.llm.total_calls(), 1 + 3 + 3 + 3 + 3);
    assert_eq!(r.metadata.model_calls, 13);
    assert_eq!(r.metadata.tokens.total, 1430);
    assert_eq!(
        (r.metadata.tokens.prompt, r.metadata.tokens.completion),
        (1300, 130)
    );
    assert!(!r.metadata.tokens.estimated);
    assert_eq!(r.metadata.hallucination_retry_count, 3);
    assert_eq!(steps(&r).last(), Some(&"grade_hallucinations"));
    assert!(r.answer.starts_with("Scripted answer [1]."), "{}", r.answer);
    assert!(r.answer.contains("token budget"), "{}", r.answer);
}

async fn a_node_whose_estimate_cannot_fit_is_not_started(provider: Provider) {
    // 500 tokens: routing (its prompt carries the knowledge base's description; estimated
    // below 500) runs and uses 110; grading three documents (estimated from their prompts:
    // far more than the 390 left) is not started.
    let h = Harness::new(provider, Script::defaults()).await;
    let mut request = RunRequest::new(QUESTION);
    request.max_tokens = Some(500);
    let r = h.run(request, 50).await;
    assert_eq!(r.metadata.limits_hit, ["token_budget"]);
    assert_eq!(steps(&r), ["route_question", "kg_retrieval"]);
    assert_eq!(h.llm.total_calls(), 1);
    assert_eq!(r.metadata.tokens.total, 110);
    // The best answer so far is extracted from the documents found, clearly marked.
    assert!(r.answer.contains("token budget"), "{}", r.answer);
    assert!(r.answer.contains("[1]"), "{}", r.answer);
    assert!(
        !r.citations.is_empty(),
        "the extracted answer cites its documents"
    );
}

async fn every_call_carries_its_output_cap(provider: Provider) {
    let h = Harness::new(provider, Script::defaults()).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.status, RunStatus::Completed);
    let calls = h.llm.recorded();
    assert_eq!(calls.len(), 7);
    for call in &calls {
        let expected = match call.name() {
            "route_query" => 64,
            "grade_documents" | "grade_hallucinations" | "grade_answer" => 32,
            // LLM_MAX_ANSWER_TOKENS's default
            "generate_answer" => 1024,
            other => panic!("unexpected call {other}"),
        };
        assert_eq!(call.max_tokens(), Some(expected), "{}", call.name());
        // The answer is plain text: no JSON schema, no forced tool.
        let structured =
            !call.body["response_format"].is_null() || !call.body["toolConfig"].is_null();
        assert_eq!(
            structured,
            call.name() != "generate_answer",
            "{}",
            call.name()
        );
    }
}

async fn an_answer_cut_at_its_cap_is_kept_and_ends_best_effort_answer_length(provider: Provider) {
    let cut = "Patch canker is caused by Phytophthora palmivora, which";
    let script = Script::defaults().on("generate_answer", [Reply::answer(cut).at_cap()]);
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.status, RunStatus::BestEffort);
    assert!(r.success);
    assert_eq!(r.metadata.limits_hit, ["answer_length"]);
    assert!(
        r.answer.starts_with(cut),
        "the cut text is kept: {}",
        r.answer
    );
    assert!(r.answer.contains("length limit"), "{}", r.answer);
    // Kept, not re-asked: the happy path's seven calls.
    assert_eq!(h.calls("generate_answer"), 1);
    assert_eq!(h.llm.total_calls(), 7);
    assert_eq!(r.metadata.model_calls, 7);
    let generate = r
        .workflow_steps
        .iter()
        .find(|s| s.name == "generate")
        .unwrap();
    assert_eq!(generate.details["answer_length"], true);
}

async fn an_answer_model_that_stays_down_is_replaced_by_a_quote_of_the_documents(
    provider: Provider,
) {
    let script = Script::defaults().on("generate_answer", [Reply::status(503)]);
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.status, RunStatus::BestEffort);
    assert!(r.success);
    assert_eq!(r.metadata.limits_hit, ["model_unavailable"]);
    assert!(r.answer.contains("Phytophthora"), "{}", r.answer);
    assert!(r.answer.contains("could not answer"), "{}", r.answer);
    assert_eq!(r.citations.len(), 3);
    // One call and three retries (FAST), then nothing more for the model to check.
    assert_eq!(h.calls("generate_answer"), 4);
    assert_eq!(h.calls("grade_hallucinations"), 0);
    assert_eq!(h.llm.total_calls(), 1 + 3 + 4);
    let generate = r
        .workflow_steps
        .iter()
        .find(|s| s.name == "generate")
        .unwrap();
    assert_eq!(generate.details["fallback"], "extractive");
}

async fn an_answer_refused_for_authentication_fails_loudly_without_a_quote(provider: Provider) {
    let script = Script::defaults().on("generate_answer", [Reply::status(401)]);
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.status, RunStatus::Failed);
    assert!(!r.success);
    assert_eq!(
        h.calls("generate_answer"),
        1,
        "a permanent error is never retried"
    );
    assert_eq!(h.llm.total_calls(), 1 + 3 + 1);
}
