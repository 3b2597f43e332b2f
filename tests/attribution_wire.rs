//! Attribution over the wire: an answer whose sentences cite nothing, cite the wrong passage,
//! or say what no passage says, written by a scripted model behind both providers and behind a
//! streamed CLI run; and a rewrite that retrieves the same passages, ending the loop early.
//! Exact model calls in each.

use crate::for_each_provider;
use crate::support;

use bounded_rag::rag::{RunRequest, RunStatus};
use serde_json::Value;
use support::happy_path::{QUESTION, VAGUE};
use support::llm_server::{Reply, Script, ScriptedLlm};
use support::providers::{details, Harness, Provider};

/// Two claims, each from its own passage of the sample, with no citation.
const UNCITED: &str = "Patch canker is caused by Phytophthora palmivora, a soil-borne water \
                       mould. It is a bark disease of the durian trunk with wet, dark patches \
                       and reddish-brown gum.";
/// The same two claims as the service cites them: in the order first cited.
const ATTRIBUTED: &str = "Patch canker is caused by Phytophthora palmivora, a soil-borne water \
                          mould [1]. It is a bark disease of the durian trunk with wet, dark \
                          patches and reddish-brown gum [2].";
const MANUAL: &str = "kb://patch-canker.md#1";
const NODE: &str = "kb://nodes.jsonl#patch_canker";

for_each_provider!(
    sentences_without_citations_are_attributed,
    a_citation_of_the_wrong_passage_is_re_pointed,
    a_sentence_no_passage_supports_is_reported_and_cites_nothing,
    a_rewrite_that_retrieves_the_same_passages_ends_the_rewrite_loop,
    a_rewrite_written_as_an_answer_keeps_the_clear_match_it_finds,
    a_rewrite_written_as_a_paragraph_is_searched_by_its_lead,
    an_answer_from_memory_cites_the_passages_a_search_with_its_words_finds,
    an_answer_from_memory_over_other_passages_is_asked_again_from_those_its_words_find,
    an_answer_from_memory_is_kept_when_asked_again_the_model_writes_only_a_citation,
);

async fn sentences_without_citations_are_attributed(provider: Provider) {
    let script = Script::defaults().on("generate_answer", [Reply::answer(UNCITED)]);
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.status, RunStatus::Completed, "{r:?}");
    // The happy path's seven calls: attribution asks no model.
    assert_eq!(h.llm.total_calls(), 7);
    assert_eq!(r.answer, ATTRIBUTED);
    let urls: Vec<&str> = r.citations.iter().map(|c| c.url.as_str()).collect();
    assert_eq!(urls, [MANUAL, NODE]);
    assert!(r.citations.iter().all(|c| c.attributed));
    assert_eq!(r.citations[1].sentences.len(), 1);
    assert!(r.citations[1].sentences[0].starts_with("It is a bark disease"));
    let a = r.metadata.attribution.as_ref().unwrap();
    assert_eq!((a.sentences, a.supported, a.attributed), (2, 2, 2));
    assert_eq!((a.written, a.repointed, a.model_citations), (0, 0, 0));
}

async fn a_citation_of_the_wrong_passage_is_re_pointed(provider: Provider) {
    // [2] is the relation "Phytophthora palmivora causes patch canker": not the bark disease.
    let wrong = UNCITED
        .replace("mould.", "mould [1].")
        .replace("gum.", "gum [2].");
    let script = Script::defaults().on("generate_answer", [Reply::answer(&wrong)]);
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(h.llm.total_calls(), 7);
    assert_eq!(r.answer, ATTRIBUTED);
    assert_eq!(r.citations[0].url, MANUAL);
    assert!(!r.citations[0].attributed, "the model's own [1] stands");
    assert_eq!(r.citations[1].url, NODE);
    assert!(r.citations[1].attributed, "re-pointed from [2]");
    let a = r.metadata.attribution.as_ref().unwrap();
    assert_eq!((a.written, a.repointed, a.attributed), (1, 1, 0));
    assert_eq!((a.model_citations, a.model_citations_supporting), (2, 1));
}

async fn a_sentence_no_passage_supports_is_reported_and_cites_nothing(provider: Provider) {
    let with_memory = format!("{UNCITED} Farmers spray vinegar on Tuesday mornings [3].");
    let script = Script::defaults().on("generate_answer", [Reply::answer(&with_memory)]);
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    // Two of three sentences supported: not mostly unsupported, so no second ask.
    assert_eq!(r.status, RunStatus::Completed, "{r:?}");
    assert_eq!(h.calls("generate_answer"), 1);
    assert_eq!(h.llm.total_calls(), 7);
    assert_eq!(
        r.answer,
        format!("{ATTRIBUTED} Farmers spray vinegar on Tuesday mornings.")
    );
    assert_eq!(r.citations.len(), 2);
    let a = r.metadata.attribution.as_ref().unwrap();
    assert_eq!(
        a.unsupported,
        ["Farmers spray vinegar on Tuesday mornings."]
    );
    assert_eq!((a.sentences, a.supported), (3, 2));
}

async fn a_rewrite_that_retrieves_the_same_passages_ends_the_rewrite_loop(provider: Provider) {
    // Every rewrite repeats the question: the first finds the passages the question found.
    let script = Script::defaults()
        .on("grade_documents", [Reply::no()])
        .on("refine_query", [Reply::refined(VAGUE)]);
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(VAGUE), 50).await;
    assert_eq!(h.calls("refine_query"), 1);
    assert_eq!(
        h.calls("grade_documents"),
        3,
        "the same passages are not graded again"
    );
    assert_eq!(r.metadata.query_transformation_retry_count, 1);
    assert!(r.metadata.web_fallback);
    assert_eq!(r.metadata.limits_hit, ["no_sources"]);
    // Route, 3 grades, 1 rewrite, the answer without sources.
    assert_eq!(h.llm.total_calls(), 6);
}

async fn a_rewrite_written_as_an_answer_keeps_the_clear_match_it_finds(provider: Provider) {
    // Every passage graded irrelevant, the clear match too (a model not yet doubted keeps its
    // verdicts). The rewrite comes as an answer (`answer`) and finds the same passages, the
    // clear match among them: the model said what an answering document holds and had graded
    // it away, so the clear match is kept, not graded again, and the answer written from it.
    // Search words (`refined_question`) claim nothing: the loop ends with the web fallback.
    for (reply, kept) in [
        (Reply::hypothetical(QUESTION), true),
        (Reply::refined(QUESTION), false),
    ] {
        let script = Script::defaults()
            .on("grade_documents", [Reply::no()])
            .on("refine_query", [reply]);
        let h = Harness::new(provider, script).await;
        let r = h.run(RunRequest::new(QUESTION), 50).await;
        assert_eq!(h.calls("refine_query"), 1);
        assert_eq!(h.calls("grade_documents"), 3, "one grading");
        assert_eq!(r.metadata.web_fallback, !kept);
        let again = (r.workflow_steps.iter())
            .filter(|s| s.name == "kg_retrieval")
            .nth(1)
            .map(|s| s.details.clone())
            .unwrap();
        assert_eq!(again["same_passages"], true);
        if kept {
            assert_eq!(r.status, RunStatus::Completed, "{r:?}");
            assert_eq!(again["overruled"][0]["rule"], "rewrites_find", "{again}");
            assert!(!r.citations.is_empty());
            assert!(
                r.citations.iter().all(|c| c.url.contains("canker")),
                "{r:?}"
            );
            // Route, 3 grades, 1 rewrite, the answer, its 2 checks.
            assert_eq!(h.llm.total_calls(), 8);
        } else {
            assert!(again.get("overruled").is_none());
            assert!(
                r.citations.iter().all(|c| !c.url.contains("canker")),
                "{r:?}"
            );
        }
    }
}

/// A rewrite written as a paragraph where one sentence was asked for: its lead names the
/// fruit borer, the rest talks of the tree at large.
const PARAGRAPH: &str = "Durian fruit borer caterpillars tunnel into developing fruit. Durian \
                         trees are tall evergreens whose trunk, bark, leaves, flowers and \
                         fruit growers inspect for psyllids, mealybugs, canker and lesions.";

async fn a_rewrite_written_as_a_paragraph_is_searched_by_its_lead(provider: Provider) {
    // Every passage graded irrelevant; the rewrite comes as a paragraph. Its search is the
    // words its lead sentence adds to the question, which find the fruit borer's passage.
    let script = Script::defaults()
        .on("grade_documents", [Reply::no()])
        .on("refine_query", [Reply::hypothetical(PARAGRAPH)]);
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(VAGUE), 50).await;
    let searches: Vec<Value> = (r.workflow_steps.iter())
        .filter(|s| s.name == "kg_retrieval")
        .map(|s| s.details.clone())
        .collect();
    assert_eq!(
        searches[1]["query"], "fruit borer caterpillars tunnel developing fruit.",
        "the words the lead adds to the question"
    );
    let found = searches[1]["sources"].as_array().unwrap();
    assert!(
        found
            .iter()
            .any(|s| s.as_str().unwrap().starts_with("kb://fruit-borer.md")),
        "{}",
        searches[1]
    );
    // The second rewrite repeats the first: its search finds the same passages and ends the
    // loop. Route, 3 grades, a rewrite, 3 grades, a rewrite, the answer without sources.
    assert_eq!(h.calls("refine_query"), 2);
    assert_eq!(h.calls("grade_documents"), 6);
    assert_eq!(r.metadata.limits_hit, ["no_sources"]);
    assert_eq!(h.llm.total_calls(), 10);
}

/// Written without documents (the fruit borer, which the vague question's search did not
/// find): the knowledge base holds both claims.
const FROM_MEMORY: &str = "The durian fruit borer is a moth whose caterpillars tunnel into \
                           developing fruit. Bagging young fruit with paper or mesh bags keeps \
                           the moths off.";

/// The answer written again from the passages the search with [`FROM_MEMORY`] found.
const FROM_PASSAGES: &str = "The fruit borer's caterpillars tunnel into developing fruit [1]. \
                             Bag young fruit with paper or mesh bags after fruit set to keep \
                             the moths off [1].";

/// The `generate_answer` prompts `h`'s model was sent, as their JSON text.
fn answer_prompts(h: &Harness) -> Vec<String> {
    (h.llm.requests().iter())
        .map(Value::to_string)
        .filter(|r| r.contains("Answer the question"))
        .collect()
}

async fn an_answer_from_memory_cites_the_passages_a_search_with_its_words_finds(
    provider: Provider,
) {
    // Every passage graded irrelevant, the rewrite repeats the question, no web search: the
    // model answers from memory. A search with the answer's words finds the passages that
    // hold it, and the answer is asked for again from them: they are its sources, and the
    // answer is checked as any answer with sources.
    let script = Script::defaults()
        .on("grade_documents", [Reply::no()])
        .on("refine_query", [Reply::refined(VAGUE)])
        .on(
            "generate_answer",
            [Reply::answer(FROM_MEMORY), Reply::answer(FROM_PASSAGES)],
        );
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(VAGUE), 50).await;
    assert_eq!(r.status, RunStatus::Completed, "{r:?}");
    assert!(
        r.metadata.limits_hit.is_empty(),
        "{:?}",
        r.metadata.limits_hit
    );
    // Route, 3 grades, 1 rewrite, the answer from memory, the answer from the passages, its
    // two checks (the search asks no model).
    assert_eq!(h.llm.total_calls(), 9);
    assert_eq!(h.calls("generate_answer"), 2);
    assert_eq!(h.calls("grade_hallucinations"), 1);
    let researched = &details(&r, "generate")["researched"];
    assert!(
        researched.as_array().is_some_and(|s| !s.is_empty()),
        "{researched}"
    );
    let prompts = answer_prompts(&h);
    assert_eq!(prompts.len(), 2);
    assert!(prompts[1].contains("caterpillars tunnel"), "{}", prompts[1]);
    // The search found the borer's description and its management: the second claim is
    // re-pointed to the passage that holds it.
    assert_eq!(r.answer, FROM_PASSAGES.replace("off [1]", "off [2]"));
    assert!(
        r.citations
            .iter()
            .all(|c| c.url.starts_with("kb://fruit-borer.md")),
        "{:?}",
        r.citations
    );
    let a = r.metadata.attribution.as_ref().unwrap();
    assert_eq!((a.sentences, a.supported), (2, 2));
    assert_eq!((a.written, a.repointed), (1, 1));
}

async fn an_answer_from_memory_over_other_passages_is_asked_again_from_those_its_words_find(
    provider: Provider,
) {
    // The question finds the patch canker passages, all graded relevant, and the model
    // answers about the fruit borer from memory: under the floor against its documents. A
    // search with its words finds the passages that hold it; the second ask, which an
    // answer under the floor gets anyway, is made from them instead.
    let script = Script::defaults().on(
        "generate_answer",
        [Reply::answer(FROM_MEMORY), Reply::answer(FROM_PASSAGES)],
    );
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.status, RunStatus::Completed, "{r:?}");
    // The happy path's seven calls and the second ask; the search asks no model.
    assert_eq!(h.llm.total_calls(), 8);
    assert_eq!(h.calls("generate_answer"), 2);
    let prompts = answer_prompts(&h);
    assert!(
        prompts[0].contains("Phytophthora palmivora"),
        "{}",
        prompts[0]
    );
    assert!(prompts[1].contains("caterpillars tunnel"), "{}", prompts[1]);
    assert!(
        !prompts[1].contains("Phytophthora palmivora"),
        "{}",
        prompts[1]
    );
    let generate = details(&r, "generate");
    assert!(generate["under_floor"].is_string(), "{generate}");
    assert!(!generate["researched"].as_array().unwrap().is_empty());
    assert_eq!(r.answer, FROM_PASSAGES.replace("off [1]", "off [2]"));
    let urls: Vec<&str> = r.citations.iter().map(|c| c.url.as_str()).collect();
    assert!(
        !urls.is_empty() && urls.iter().all(|u| u.starts_with("kb://fruit-borer.md")),
        "{urls:?}"
    );
    let a = r.metadata.attribution.as_ref().unwrap();
    assert_eq!((a.sentences, a.supported), (2, 2));
}

async fn an_answer_from_memory_is_kept_when_asked_again_the_model_writes_only_a_citation(
    provider: Provider,
) {
    // As above, but asked again from the passages its words found, the model writes only
    // "[1]" (Qwen2.5-Coder 1.5B did, from du(1)'s page). The first answer stands on those
    // passages: it is the answer, cited from them, not the extractive quote.
    let script = Script::defaults().on(
        "generate_answer",
        [Reply::answer(FROM_MEMORY), Reply::answer("[1]")],
    );
    let h = Harness::new(provider, script).await;
    let r = h.run(RunRequest::new(QUESTION), 50).await;
    assert_eq!(r.status, RunStatus::Completed, "{r:?}");
    assert!(
        r.metadata.limits_hit.is_empty(),
        "{:?}",
        r.metadata.limits_hit
    );
    // The happy path's seven calls and the second ask.
    assert_eq!(h.llm.total_calls(), 8);
    assert_eq!(h.calls("generate_answer"), 2);
    let generate = details(&r, "generate");
    assert_eq!(generate["first_answer_kept"], true, "{generate}");
    assert!(!generate["researched"].as_array().unwrap().is_empty());
    assert!(
        r.answer.starts_with("The durian fruit borer is a moth"),
        "{}",
        r.answer
    );
    let urls: Vec<&str> = r.citations.iter().map(|c| c.url.as_str()).collect();
    assert!(
        !urls.is_empty() && urls.iter().all(|u| u.starts_with("kb://fruit-borer.md")),
        "{urls:?}"
    );
    let a = r.metadata.attribution.as_ref().unwrap();
    assert_eq!((a.sentences, a.supported), (2, 2));
}

/// Runs `ask --stream --json ARGS` against `llm`; the events, parsed.
async fn streamed(llm: &ScriptedLlm, question: &str) -> Vec<Value> {
    let state = tempfile::tempdir().unwrap();
    let base = llm.base_url();
    let dir = state.path().to_owned();
    let question = question.to_owned();
    let out = tokio::task::spawn_blocking(move || {
        let env = [("LLM_BASE_URL", base.as_str()), ("SPECULATION", "off")];
        let args = ["ask", "--stream", "--json", question.as_str()];
        support::bin::run(&dir, &[], &env, &args)
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn a_streamed_answer_streams_as_written_and_ends_attributed() {
    let llm = ScriptedLlm::start(
        Script::defaults().on("generate_answer", [Reply::answer(UNCITED).chunked(8)]),
    )
    .await;
    let events = streamed(&llm, QUESTION).await;
    let tokens: String = (events.iter())
        .filter(|e| e["event"] == "token")
        .map(|e| e["data"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(tokens, UNCITED, "the tokens are the model's");
    let last = &events.last().unwrap();
    assert_eq!(last["event"], "final");
    let last = &last["data"];
    assert_eq!(last["answer"], ATTRIBUTED);
    assert_eq!(last["citations"][0]["url"], MANUAL);
    assert_eq!(last["citations"][1]["attributed"], true);
    assert_eq!(last["metadata"]["attribution"]["attributed"], 2);
    assert_eq!(last["metadata"]["model_calls"], 7);
    assert_eq!(llm.sequence().len(), 7);
}

#[tokio::test]
async fn a_streamed_run_whose_rewrite_finds_the_same_passages_ends_the_loop() {
    let llm = ScriptedLlm::start(
        Script::defaults()
            .on("grade_documents", [Reply::no()])
            .on("refine_query", [Reply::refined(VAGUE)]),
    )
    .await;
    let events = streamed(&llm, VAGUE).await;
    let steps: Vec<&Value> = events.iter().filter(|e| e["event"] == "step").collect();
    let retrievals: Vec<&&Value> = (steps.iter())
        .filter(|e| e["data"]["name"] == "kg_retrieval")
        .collect();
    assert_eq!(retrievals.len(), 2);
    assert_eq!(retrievals[1]["data"]["details"]["same_passages"], true);
    let last = &events.last().unwrap()["data"];
    assert_eq!(last["metadata"]["query_transformation_retry_count"], 1);
    assert_eq!(last["metadata"]["model_calls"], 6);
    assert_eq!(llm.sequence().len(), 6);
}

#[tokio::test]
async fn a_streamed_answer_from_memory_is_discarded_and_written_again_from_what_its_words_find() {
    let llm = ScriptedLlm::start(Script::defaults().on(
        "generate_answer",
        [Reply::answer(FROM_MEMORY), Reply::answer(FROM_PASSAGES)],
    ))
    .await;
    let events = streamed(&llm, QUESTION).await;
    let of = |kind: &str| -> Vec<&Value> { events.iter().filter(|e| e["event"] == kind).collect() };
    // The first attempt streams, is discarded, and the second streams from the new passages.
    let discarded: Vec<&Value> = of("discarded")
        .into_iter()
        .map(|e| &e["data"]["attempt"])
        .collect();
    assert_eq!(discarded, [&Value::from(1)]);
    let second: String = (of("token").into_iter())
        .filter(|e| e["data"]["attempt"] == 2)
        .map(|e| e["data"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(second, FROM_PASSAGES);
    let last = &events.last().unwrap()["data"];
    assert_eq!(last["answer"], FROM_PASSAGES.replace("off [1]", "off [2]"));
    assert!(last["citations"][0]["url"]
        .as_str()
        .unwrap()
        .starts_with("kb://fruit-borer.md"));
    assert_eq!(last["metadata"]["model_calls"], 8);
    assert_eq!(llm.sequence().len(), 8);
}

#[tokio::test]
async fn a_streamed_answer_from_memory_is_kept_when_asked_again_the_model_writes_only_a_citation() {
    let llm = ScriptedLlm::start(Script::defaults().on(
        "generate_answer",
        [Reply::answer(FROM_MEMORY), Reply::answer("[1]")],
    ))
    .await;
    let events = streamed(&llm, QUESTION).await;
    // Both attempts stream and are discarded; the final event carries the first, cited from
    // the passages its words found.
    let discarded: Vec<&Value> = (events.iter())
        .filter(|e| e["event"] == "discarded")
        .map(|e| &e["data"]["attempt"])
        .collect();
    assert_eq!(discarded, [&Value::from(1), &Value::from(2)]);
    let last = &events.last().unwrap()["data"];
    assert!(
        (last["answer"].as_str().unwrap()).starts_with("The durian fruit borer is a moth"),
        "{last}"
    );
    assert!(last["citations"][0]["url"]
        .as_str()
        .unwrap()
        .starts_with("kb://fruit-borer.md"));
    assert_eq!(last["metadata"]["model_calls"], 8);
    assert_eq!(llm.sequence().len(), 8);
}
