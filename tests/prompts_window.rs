//! Prompts fitted to a small context window, read at a scripted OpenAI-compatible server
//! through the `bounded-rag` binary: long documents cut to fit, an overflow answered once with
//! fewer documents, and a long thread that keeps its newest turns, with exact call counts.

use crate::support;

use support::llm_server::{Reply, Script, ScriptedLlm};
use support::prompts::{calls, cli, json, prompt, skeleton, write};
use support::scripted_http::Call;

/// A paragraph of `words` words about irrigation.
fn long_paragraph(seed: usize, words: usize) -> String {
    (0..words)
        .map(|i| match i % 7 {
            0 => "irrigation".to_owned(),
            1 => "season".to_owned(),
            _ => format!("word{}x{}", seed, i % 50),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The long thread's document: a sentence, then a glossary of 50 terms (`term0`..`term49`).
fn glossary_document() -> String {
    let terms: Vec<String> = (0..50).map(|i| format!("term{i}")).collect();
    format!(
        "# Irrigation\n\nYoung trees need irrigation twice a week in the dry season.\n\n\
         Glossary: {}.\n",
        terms.join(" ")
    )
}

/// A paragraph of `words` words about irrigation: the document's glossary terms (so it is
/// grounded), every 25th word this turn's own (`word{seed}x…`).
fn grounded_paragraph(seed: usize, words: usize) -> String {
    (0..words)
        .map(|i| match i % 7 {
            0 => "irrigation".to_owned(),
            1 => "season".to_owned(),
            _ if i % 25 == 3 => format!("word{seed}x{}", i % 50),
            _ => format!("term{}", i % 50),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Tokens as the workflow counts them, high: three characters a token.
fn counted(call: &Call) -> u64 {
    let (system, user) = prompt(call);
    ((system.chars().count() + user.chars().count()) as u64).div_ceil(3)
}

#[tokio::test]
async fn long_documents_are_fitted_to_a_small_window_and_an_overflow_is_retried_once_smaller() {
    let work = tempfile::tempdir().unwrap();
    let kb = work.path().join("kb");
    for n in 0..3 {
        write(
            &kb,
            &format!("doc{n}.md"),
            &format!("# Irrigation note {n}\n\n{}\n", long_paragraph(n, 240)),
        );
    }
    let question = "What does the irrigation season need?";
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let base = llm.base_url();
    let state = tempfile::tempdir().unwrap();
    let env = [
        ("LLM_BASE_URL", base.as_str()),
        ("KB_PATH", kb.to_str().unwrap()),
        ("LLM_CONTEXT_TOKENS", "1024"),
        ("LLM_MAX_ANSWER_TOKENS", "128"),
    ];
    let out = cli(state.path(), &env, &["ask", question, "--json"]).await;
    let run = json(&out);
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(llm.total_calls(), 7, "fitting adds no call");
    for call in llm.recorded() {
        let cap = call.max_tokens().unwrap();
        assert!(
            counted(&call) + cap <= 1024,
            "{}: {} + {cap}",
            call.name(),
            counted(&call)
        );
    }
    let answer = &calls(&llm, "generate_answer")[0];
    let (_, user) = prompt(answer);
    let (_, kept) = skeleton(&user);
    let step = run["workflow_steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "generate")
        .unwrap();
    let fit = &step["details"]["prompt_fit"];
    let dropped = fit["documents_dropped"].as_u64().unwrap() as usize;
    assert!(dropped >= 1, "{fit}");
    assert_eq!(kept + dropped, 3, "{fit}");

    // The server says the prompt is over its window: asked once more with half the room.
    llm.clear();
    llm.script(
        "generate_answer",
        [Reply::overflow(), Reply::answer("Scripted answer [1].")],
    );
    let env = [
        ("LLM_BASE_URL", base.as_str()),
        ("KB_PATH", kb.to_str().unwrap()),
        ("LLM_CONTEXT_TOKENS", "4096"),
        ("LLM_MAX_ANSWER_TOKENS", "128"),
    ];
    let out = cli(state.path(), &env, &["ask", question, "--json"]).await;
    assert_eq!(json(&out)["status"], "completed");
    let answers = calls(&llm, "generate_answer");
    assert_eq!(answers.len(), 2, "one retry, never more");
    assert_eq!(llm.total_calls(), 8);
    let docs = |call: &Call| skeleton(&prompt(call).1).1;
    assert_eq!(docs(&answers[0]), 3);
    // The retry's prompt: what its fit left out or cut is in the step's details.
    let step = json(&out)["workflow_steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "generate")
        .cloned()
        .unwrap();
    let fit = &step["details"]["prompt_fit"];
    let dropped = fit["documents_dropped"].as_u64().unwrap() as usize;
    let trimmed = fit["documents_trimmed"].as_u64().unwrap() as usize;
    assert!(dropped + trimmed >= 1, "{fit}");
    assert_eq!(docs(&answers[1]) + dropped, 3, "{fit}");
    assert!(counted(&answers[1]) < counted(&answers[0]));
}

#[tokio::test]
async fn a_long_thread_keeps_its_newest_turns_within_the_window() {
    let work = tempfile::tempdir().unwrap();
    let kb = work.path().join("kb");
    write(&kb, "irrigation.md", &glossary_document());
    // Each turn's answer is long (~3,500 characters), drawn from the document's words (so it
    // is grounded) and its own (`word{turn}x…`).
    let answers: Vec<Reply> = (1..=4)
        .map(|t| Reply::answer(&grounded_paragraph(t, 400)))
        .collect();
    let script = Script::defaults().on("generate_answer", answers).on(
        "contextualize_question",
        [Reply::json(serde_json::json!({
            "standalone_question": "How often do young trees need irrigation?"
        }))],
    );
    let llm = ScriptedLlm::start(script).await;
    let base = llm.base_url();
    let state = tempfile::tempdir().unwrap();
    let env = [
        ("LLM_BASE_URL", base.as_str()),
        ("KB_PATH", kb.to_str().unwrap()),
        ("LLM_CONTEXT_TOKENS", "2048"),
        ("LLM_MAX_ANSWER_TOKENS", "256"),
        ("THREAD_HISTORY_TOKENS", "100000"),
    ];
    let mut out_last = None;
    for turn in 1..=4 {
        let question = format!("And what about irrigation, part {turn}?");
        let out = cli(
            state.path(),
            &env,
            &["ask", &question, "--thread", "long", "--json"],
        )
        .await;
        let run = json(&out);
        assert_ne!(run["status"], "failed", "turn {turn}: {run}");
        out_last = Some(out);
    }
    let out_last = out_last.unwrap();
    let contextualized = calls(&llm, "contextualize_question");
    assert_eq!(contextualized.len(), 3, "every turn but the first");
    for call in llm.recorded() {
        assert!(
            counted(&call) + call.max_tokens().unwrap() <= 2048,
            "{}: {}",
            call.name(),
            counted(&call)
        );
    }
    // The last follow-up had 3 earlier turns of ~1,200 tokens each, and room for one.
    let (_, user) = prompt(&contextualized[2]);
    let turns = user.lines().filter(|l| l.starts_with("User: ")).count();
    assert_eq!(turns, 1, "{user}");
    assert!(user.contains("word3x"), "the newest turn is kept");
    assert!(
        !user.contains("word1x") && !user.contains("word2x"),
        "older turns are left out"
    );
    let last = json(&out_last)["workflow_steps"][0].clone();
    assert_eq!(last["name"], "contextualize_question");
    assert_eq!(last["details"]["history_turns"], 3);
    assert_eq!(last["details"]["prompt_fit"]["history_dropped"], 2);
}
