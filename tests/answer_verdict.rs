//! An answer that opens by saying its documents do not answer is the model's own verdict on
//! the passages its grades kept: they are set aside, and the run goes where no relevant
//! passage leads (a rewrite while rewrites remain), the answer unchecked. Over the wire,
//! behind both providers, with exact model calls.

use crate::for_each_provider;
use crate::support;

use bounded_rag::rag::{RunRequest, RunStatus};
use support::happy_path::{QUESTION, REWRITES, VAGUE};
use support::llm_server::{Reply, Script};
use support::providers::{Harness, Provider};

/// What Qwen2.5-Coder 1.5B wrote over passages its grades kept and that did not answer.
const NOT_IN_THEM: &str = "The documents do not provide information on durian trees in \
                           general. They only describe one pest of the fruit [1].";

for_each_provider!(
    an_answer_saying_its_passages_do_not_answer_rewrites_the_query,
    an_answer_with_a_caveat_after_its_claim_is_checked_as_before,
);

async fn an_answer_saying_its_passages_do_not_answer_rewrites_the_query(provider: Provider) {
    let script = Script::defaults()
        .on(
            "generate_answer",
            [
                Reply::answer(NOT_IN_THEM),
                Reply::answer("Scripted answer [1]."),
            ],
        )
        .on("refine_query", [Reply::refined(REWRITES[0])]);
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(VAGUE), 50).await;
    assert_eq!(r.status, RunStatus::Completed, "{r:?}");
    // Route, 3 grades, the answer (not checked), 1 rewrite, 3 grades, the answer, its 2
    // checks.
    assert_eq!(h.llm.total_calls(), 12);
    assert_eq!(h.calls("refine_query"), 1);
    assert_eq!(h.calls("generate_answer"), 2);
    assert_eq!(h.calls("grade_hallucinations"), 1);
    let first = (r.workflow_steps.iter())
        .find(|s| s.name == "generate")
        .map(|s| s.details.clone())
        .unwrap();
    assert_eq!(first["documents_do_not_answer"], true, "{first}");
    assert_eq!(first["decision"], "transform_query", "{first}");
    assert_eq!(r.answer.trim_end(), "Scripted answer [1].");
    // It stands on what the rewrite found, not on the passages it said do not answer.
    let searches: Vec<_> = (r.workflow_steps.iter())
        .filter(|s| s.name == "kg_retrieval")
        .map(|s| s.details["sources"].clone())
        .collect();
    assert_eq!(searches.len(), 2);
    let found_again = |url: &str| searches[1].as_array().unwrap().iter().any(|s| s == url);
    let found_first = |url: &str| searches[0].as_array().unwrap().iter().any(|s| s == url);
    assert!(!r.citations.is_empty());
    assert!(
        r.citations
            .iter()
            .all(|c| found_again(&c.url) && !found_first(&c.url)),
        "{:?} {searches:?}",
        r.citations
    );
}

async fn an_answer_with_a_caveat_after_its_claim_is_checked_as_before(provider: Provider) {
    // The answer's claim comes first: it stands on its passages, and goes to its checks (the
    // happy path's seven calls).
    let text = "Patch canker is caused by Phytophthora palmivora [1]. The documents do not \
                say how fast it spreads.";
    let script = Script::defaults().on("generate_answer", [Reply::answer(text)]);
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.status, RunStatus::Completed, "{r:?}");
    assert_eq!(h.llm.total_calls(), 7);
    assert_eq!(h.calls("refine_query"), 0);
    assert!(r
        .workflow_steps
        .iter()
        .all(|s| s.details.get("documents_do_not_answer").is_none()));
}
