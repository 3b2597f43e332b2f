//! The floor under every answer, over the wire: an answer a weak model writes (the prompt
//! echoed, a row of citations) is asked for once more and then replaced by a quote of the
//! documents (`model_unusable`); grades that contradict a clear lexical signal are overruled
//! and recorded. Exact call counts, for both providers and for a streamed run.

use crate::for_each_provider;
use crate::support;

use bounded_rag::rag::{RunRequest, RunResponse, RunStatus};
use serde_json::Value;
use support::llm_server::{Reply, Script, ScriptedLlm};
use support::providers::{steps, Harness, Provider};

const QUESTION: &str = "What causes patch canker in durian?";
/// What Gemma 3 270M answered with the earlier prompt: the instructions, echoed.
const ECHO: &str = "Answer the question using the documents. Cite the documents you use by \
                    their number, like [1]. If they do not answer the question, say so.";
/// A row of citations: no content.
const MARKERS: &str = "[1] [2] [3] [1] [2] [3]";
const GOOD: &str =
    "Patch canker is caused by Phytophthora palmivora, a soil-borne water mould [1].";

for_each_provider!(
    an_echoed_answer_is_asked_for_once_more_and_the_second_is_used,
    answers_that_stay_under_the_floor_end_with_a_quote_and_model_unusable,
    a_clear_match_graded_irrelevant_is_kept_and_the_overrule_recorded,
    an_answer_without_support_graded_grounded_is_regenerated,
    the_quote_of_an_unusable_model_draws_on_the_passages_its_grades_set_aside,
);

fn details(r: &RunResponse, name: &str) -> Value {
    let step = r.workflow_steps.iter().find(|s| s.name == name);
    step.unwrap_or_else(|| panic!("no {name} step"))
        .details
        .clone()
}

async fn an_echoed_answer_is_asked_for_once_more_and_the_second_is_used(provider: Provider) {
    let script = Script::defaults().on(
        "generate_answer",
        [Reply::answer(ECHO), Reply::answer(GOOD)],
    );
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.status, RunStatus::Completed, "{r:?}");
    assert_eq!(r.answer, GOOD);
    // The happy path's seven calls and one more answer.
    assert_eq!(h.calls("generate_answer"), 2);
    assert_eq!(h.llm.total_calls(), 8);
    assert_eq!(r.metadata.model_calls, 8);
    let generate = details(&r, "generate");
    assert_eq!(generate["under_floor"], "the answer repeats the prompt");
    assert_eq!(generate["attempt"], 2);
    assert_eq!(generate["model_calls"], 2);
    // The second ask says what was wrong, in the instruction; the question is still last.
    let asks: Vec<String> = h
        .llm
        .requests()
        .into_iter()
        .map(|b| b.to_string())
        .filter(|b| b.contains("Answer the question using the documents"))
        .collect();
    assert_eq!(asks.len(), 2);
    assert!(!asks[0].contains("Do not repeat these instructions"));
    assert!(
        asks[1].contains("Do not repeat these instructions"),
        "{}",
        asks[1]
    );
}

async fn answers_that_stay_under_the_floor_end_with_a_quote_and_model_unusable(provider: Provider) {
    let script = Script::defaults().on("generate_answer", [Reply::answer(MARKERS)]);
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.status, RunStatus::BestEffort);
    assert!(r.success);
    assert_eq!(r.metadata.limits_hit, ["model_unusable"]);
    assert!(!r.answer.contains(MARKERS), "{}", r.answer);
    assert!(r.answer.contains("Phytophthora"), "the quote: {}", r.answer);
    assert!(r.answer.contains("did not pass the checks"), "{}", r.answer);
    assert_eq!(r.citations.len(), 3);
    // Route, three grades, the answer twice; nothing left for the model to check.
    assert_eq!(h.calls("generate_answer"), 2);
    assert_eq!(h.calls("grade_hallucinations"), 0);
    assert_eq!(h.calls("grade_answer"), 0);
    assert_eq!(h.llm.total_calls(), 6);
    assert_eq!(r.metadata.model_calls, 6);
    let generate = details(&r, "generate");
    assert_eq!(generate["fallback"], "extractive");
    assert_eq!(generate["error"], "the answer has no content (twice)");
    assert_eq!(
        steps(&r),
        [
            "route_question",
            "kg_retrieval",
            "grade_documents",
            "generate"
        ]
    );
}

async fn a_clear_match_graded_irrelevant_is_kept_and_the_overrule_recorded(provider: Provider) {
    let script = Script::defaults().on("grade_documents", [Reply::no()]);
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    // Every document graded irrelevant, but the clear match is kept: no rewrite, the happy
    // path's seven calls.
    assert_eq!(r.status, RunStatus::Completed, "{r:?}");
    assert_eq!(h.calls("refine_query"), 0);
    assert_eq!(h.llm.total_calls(), 7);
    let graded = details(&r, "grade_documents");
    assert_eq!(graded["graded"], 3);
    assert_eq!(graded["relevant"], 1);
    let overruled = graded["overruled"].as_array().unwrap();
    assert_eq!(overruled.len(), 1, "{graded}");
    assert_eq!(overruled[0]["rule"], "clear_match");
    assert_eq!(overruled[0]["grade"], "no");
    assert_eq!(r.citations.len(), 1);
    assert!(
        r.citations[0].url.contains("patch-canker"),
        "{:?}",
        r.citations
    );
}

async fn an_answer_without_support_graded_grounded_is_regenerated(provider: Provider) {
    // Passes the floor (it shares "trunk" with the documents) but most of what it says is in
    // none of them; the scripted grade calls it grounded anyway.
    let invented = "Patch canker spreads when bananas, mangoes, pineapples, lychees, kiwis, \
                    tamarinds and apples share the trunk [1].";
    let script = Script::defaults().on(
        "generate_answer",
        [Reply::answer(invented), Reply::answer(GOOD)],
    );
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.status, RunStatus::Completed, "{r:?}");
    assert_eq!(r.answer, GOOD);
    assert_eq!(r.metadata.hallucination_retry_count, 1);
    // Route, three grades, then answer + both checks twice.
    assert_eq!(h.calls("generate_answer"), 2);
    assert_eq!(h.calls("grade_hallucinations"), 2);
    assert_eq!(h.llm.total_calls(), 10);
    let first = r
        .workflow_steps
        .iter()
        .find(|s| s.name == "grade_hallucinations")
        .unwrap();
    assert_eq!(first.details["grounded"], false);
    assert_eq!(first.details["overruled"]["rule"], "no_support");
    assert_eq!(first.details["overruled"]["grade"], "yes");
}

async fn the_quote_of_an_unusable_model_draws_on_the_passages_its_grades_set_aside(
    provider: Provider,
) {
    // Two of three passages graded irrelevant by a model whose answers then stay under the
    // floor: its grades are not trusted either, so the quote and its sources are all three.
    let script = Script::defaults()
        .on("grade_documents", [Reply::yes(), Reply::no(), Reply::no()])
        .on("generate_answer", [Reply::answer(MARKERS)]);
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.metadata.limits_hit, ["model_unusable"]);
    assert_eq!(details(&r, "grade_documents")["relevant"], 1);
    assert_eq!(r.citations.len(), 3, "{:?}", r.citations);
    assert_eq!(h.llm.total_calls(), 6);
}

/// A streamed run whose answers stay under the floor: each attempt's tokens are followed by
/// its `discarded`, and the final answer is the quote.
#[tokio::test]
async fn a_streamed_unusable_answer_is_marked_discarded_and_replaced_by_the_quote() {
    let llm = ScriptedLlm::start(
        Script::defaults().on("generate_answer", [Reply::answer(ECHO).chunked(8)]),
    )
    .await;
    let state = tempfile::tempdir().unwrap();
    let base = llm.base_url();
    let dir = state.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        let env = [("LLM_BASE_URL", base.as_str()), ("SPECULATION", "off")];
        support::bin::run(&dir, &[], &env, &["ask", "--stream", "--json", QUESTION])
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let order: Vec<String> = events
        .iter()
        .filter_map(|e| {
            let name = e["event"].as_str()?;
            match name {
                "token" | "discarded" => Some(format!("{name}:{}", e["data"]["attempt"])),
                "final" => Some("final".into()),
                _ => None,
            }
        })
        .fold(Vec::new(), |mut out, label| {
            if out.last() != Some(&label) {
                out.push(label);
            }
            out
        });
    assert_eq!(
        order,
        ["token:1", "discarded:1", "token:2", "discarded:2", "final"]
    );
    let last = &events.last().unwrap()["data"];
    assert_eq!(last["status"], "best_effort");
    assert_eq!(
        last["metadata"]["limits_hit"],
        serde_json::json!(["model_unusable"])
    );
    assert_eq!(last["metadata"]["model_calls"], 6);
    assert!(!last["answer"]
        .as_str()
        .unwrap()
        .contains("Cite the documents"));
    assert_eq!(llm.calls("generate_answer"), 2);
}
