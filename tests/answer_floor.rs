//! The floor under every answer, over the wire: an answer a weak model writes (the prompt
//! echoed, a row of citations) is asked for once more and then replaced by a quote of the
//! documents (`model_unusable`); an answer mostly unsupported by its passages is asked for
//! once more; a capable grader's verdicts stand, and a clear match overrules the grades of a
//! model only once it has shown itself unreliable. Exact call counts, for both providers and for a streamed run.

use crate::for_each_provider;
use crate::support;

use bounded_rag::config::Speculation;
use bounded_rag::rag::{RunRequest, RunStatus};
use serde_json::Value;
use support::happy_path::{CANKER_REWRITES, QUESTION};
use support::llm_server::{Reply, Script, ScriptedLlm};
use support::providers::{details, steps, Harness, Provider};

/// What Gemma 3 270M answered with an earlier prompt: the instructions, echoed (here, the
/// current ones).
const ECHO: &str = "Answer the question using the documents. If the answer is a tool, \
                    library, package or command, name it as its document names it.";
/// A row of citations: no content.
const MARKERS: &str = "[1] [2] [3] [1] [2] [3]";
const GOOD: &str =
    "Patch canker is caused by Phytophthora palmivora, a soil-borne water mould [1].";

for_each_provider!(
    an_echoed_answer_is_asked_for_once_more_and_the_second_is_used,
    answers_that_stay_under_the_floor_end_with_a_quote_and_model_unusable,
    a_capable_graders_no_stands_three_rewrites_then_web_search,
    a_clear_match_is_kept_once_the_model_has_shown_itself_unreliable,
    an_answer_most_of_whose_sentences_no_passage_supports_is_asked_for_once_more,
    the_quote_of_an_unusable_model_draws_on_the_passages_its_grades_set_aside,
);

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

async fn a_capable_graders_no_stands_three_rewrites_then_web_search(provider: Provider) {
    // Every passage graded irrelevant, the clear match included, by a model that has not
    // shown itself unreliable: its verdicts stand and the seeds' loop runs as designed.
    let script = Script::defaults()
        .on("grade_documents", [Reply::no()])
        .on("refine_query", CANKER_REWRITES.map(Reply::refined));
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(h.calls("refine_query"), 3);
    assert_eq!(r.metadata.query_transformation_retry_count, 3);
    assert_eq!(h.calls("grade_documents"), 12, "4 retrievals x 3 passages");
    assert!(r.metadata.web_fallback);
    assert_eq!(r.metadata.limits_hit, ["no_sources"]);
    // Route, 12 grades, 3 rewrites, the answer without sources.
    assert_eq!(h.llm.total_calls(), 17);
    let graded = details(&r, "grade_documents");
    assert_eq!(graded["relevant"], 0);
    assert!(graded.get("overruled").is_none(), "{graded}");
}

async fn a_clear_match_is_kept_once_the_model_has_shown_itself_unreliable(provider: Provider) {
    // Speculating: the first answer echoes the prompt (under the floor), so the model's `no`
    // for the clear match is overruled at the join; the speculative answer, written from
    // passages now set aside, is discarded and the answer written from the clear match.
    let script = Script::defaults().on("grade_documents", [Reply::no()]).on(
        "generate_answer",
        [
            Reply::answer(ECHO),
            Reply::answer(GOOD),
            Reply::answer(GOOD),
        ],
    );
    let mut h = Harness::new(provider, script).await;
    h.graph = h.graph.with_speculation(Speculation::On);
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.status, RunStatus::Completed, "{r:?}");
    assert_eq!(h.calls("refine_query"), 0);
    // Route, 3 grades, the speculative answer twice, the answer, both checks.
    assert_eq!(h.calls("generate_answer"), 3);
    assert_eq!(h.llm.total_calls(), 9);
    let speculation = serde_json::to_value(&r.metadata).unwrap()["speculation"].clone();
    assert_eq!(speculation["discarded"], 1, "{speculation}");
    assert_eq!(r.answer, GOOD);
    assert_eq!(r.citations.len(), 1);
    assert!(
        r.citations[0].url.contains("patch-canker"),
        "{:?}",
        r.citations
    );
}

async fn an_answer_most_of_whose_sentences_no_passage_supports_is_asked_for_once_more(
    provider: Provider,
) {
    // Passes the older checks (it shares "trunk" with the documents) but its one claim is in
    // no passage: asked for once more in the same step, with the hint; the second is used.
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
    assert_eq!(r.metadata.hallucination_retry_count, 0);
    assert_eq!(h.calls("generate_answer"), 2);
    assert_eq!(h.calls("grade_hallucinations"), 1);
    // The happy path's seven calls and one more answer.
    assert_eq!(h.llm.total_calls(), 8);
    let generate = details(&r, "generate");
    assert_eq!(
        generate["under_floor"],
        "0 of the answer's 1 sentences are supported by its documents"
    );
    let asks: Vec<String> = (h.llm.requests().into_iter())
        .map(|b| b.to_string())
        .filter(|b| b.contains("Answer the question using the documents"))
        .collect();
    assert!(asks[1].contains("not from memory"), "{}", asks[1]);
    let attribution = r.metadata.attribution.as_ref().unwrap();
    assert_eq!((attribution.sentences, attribution.supported), (1, 1));
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
        .contains("name it as its document names it"));
    assert_eq!(llm.calls("generate_answer"), 2);
}
