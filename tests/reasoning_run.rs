//! A whole run on a reasoning model, black-box through the `bounded-rag` binary: the settings
//! (`LLM_REASONING_EFFORT`, `LLM_REASONING_TOKENS`) reach every call's wire, every cap carries
//! the thinking allowance, the streamed `token` events carry the answer and nothing the model
//! thought, and the thinking is counted. An OpenAI-compatible server answering like an o-series
//! model that writes `<think>` blocks, and Claude's extended thinking on Bedrock.

use crate::support;

use crate::support::happy_path::QUESTION;
use serde_json::Value;
use std::process::Output;
use support::bedrock_server::{BedrockScript, ScriptedBedrock};
use support::llm_server::{Reply, Script, ScriptedLlm};
use support::scripted_http::Scripted;

const ANSWER: &str = "Scripted answer [1].";
const THOUGHT: &str = "The user asks about durian; document 1 names the cause.";

fn json_lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The text of the `token` events, one string per event, and the `final` event's data.
fn tokens_and_final(out: &Output) -> (Vec<String>, Value) {
    let lines = json_lines(out);
    let tokens = lines
        .iter()
        .filter(|l| l["event"] == "token")
        .map(|l| l["data"]["text"].as_str().unwrap().to_owned())
        .collect();
    let last = lines.last().expect("a final event");
    assert_eq!(last["event"], "final", "{last}");
    (tokens, last["data"].clone())
}

/// A call's own cap, before the thinking allowance.
fn base_cap(name: &str) -> u64 {
    match name {
        "route_query" => 64,
        "grade_documents" | "grade_hallucinations" | "grade_answer" => 32,
        "generate_answer" => 1024,
        other => panic!("unexpected call {other}"),
    }
}

/// Every scripted reply of `Script::defaults()` with what the model thought before it: as a
/// `<think>` block of the content (OpenAI-compatible), or as a reasoning block (Bedrock).
fn thinking_script(as_block: bool, wrap: impl Fn(Reply) -> Reply) -> Script {
    let think = |content: String| match as_block {
        true => Reply::raw(content).reasoning_content(THOUGHT),
        false => Reply::raw(format!("<think>\n{THOUGHT}\n</think>\n\n{content}")),
    };
    let decision = |json: &str| wrap(think(json.to_owned()).reasoning_tokens(8));
    Script::new()
        .on(
            "route_query",
            [decision(r#"{"data_source": "kg_retrieval"}"#)],
        )
        .on("grade_documents", [decision(r#"{"binary_score": "yes"}"#)])
        .on(
            "grade_hallucinations",
            [decision(r#"{"binary_score": "yes"}"#)],
        )
        .on("grade_answer", [decision(r#"{"binary_score": "yes"}"#)])
        .on(
            "generate_answer",
            [wrap(
                think(ANSWER.to_owned()).chunked(3).reasoning_tokens(8),
            )],
        )
}

#[test]
fn an_o_series_run_sends_the_effort_raises_every_cap_and_streams_no_thought() {
    let llm: ScriptedLlm = Scripted::serve_in_thread(
        "/v1/chat/completions",
        thinking_script(false, Reply::o_series),
    );
    let dir = tempfile::tempdir().unwrap();
    let base_url = llm.base_url();
    let env = [
        ("LLM_BASE_URL", base_url.as_str()),
        ("LLM_REASONING_EFFORT", "high"),
        ("LLM_REASONING_TOKENS", "2048"),
        // The sequential path's exact calls.
        ("SPECULATION", "off"),
    ];
    let out = support::bin::run(
        dir.path(),
        &[],
        &env,
        &["ask", "--stream", "--json", QUESTION],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (tokens, run) = tokens_and_final(&out);
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["answer"], ANSWER);
    // The answer arrived in 3-character pieces, the `<think>` tags split among them: the token
    // events are the answer, and nothing of the block.
    assert_eq!(tokens.concat(), ANSWER);
    assert!(
        tokens
            .iter()
            .all(|t| !t.contains('<') && !t.contains("durian")),
        "{tokens:?}"
    );

    // Seven calls, each parsed at once (no re-ask), each asking for the effort with its own cap
    // plus the allowance, in the field a reasoning model reads (the script refuses the rest).
    let calls = llm.recorded();
    assert_eq!(calls.len(), 7, "{:?}", llm.sequence());
    assert_eq!(run["metadata"]["model_calls"], 7);
    for call in &calls {
        assert_eq!(
            call.body["max_completion_tokens"].as_u64(),
            Some(base_cap(call.name()) + 2048),
            "{}",
            call.name()
        );
        assert_eq!(call.body["reasoning_effort"], "high");
    }
    // 7 calls of 100 + 10 tokens, 8 of each 10 spent thinking.
    assert_eq!(run["metadata"]["tokens"]["completion"], 70);
    assert_eq!(run["metadata"]["tokens"]["total"], 770);
    let generate = run["workflow_steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "generate")
        .expect("a generate step");
    assert_eq!(generate["details"]["tokens"]["reasoning"], 8, "{generate}");
    assert_eq!(
        generate["details"]["tokens"]["completion"], 10,
        "{generate}"
    );
}

#[test]
fn a_claude_run_on_bedrock_thinks_within_its_budget_and_streams_no_thought() {
    const CLAUDE: &str = "us.anthropic.claude-sonnet-4-20250514-v1:0";
    let server = ScriptedBedrock::start_in_thread(BedrockScript::new(thinking_script(true, |r| r)));
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("LLM_PROVIDER", "bedrock"),
        ("LLM_MODEL", CLAUDE),
        ("LLM_REASONING_EFFORT", "medium"),
        ("LLM_REASONING_TOKENS", "1024"),
        ("SPECULATION", "off"),
    ];
    let ask = ["ask", "--stream", "--json", QUESTION];
    let out = support::bin::run(dir.path(), &server.env(), &env, &ask);
    assert!(out.status.success(), "{}", stderr(&out));
    let (tokens, run) = tokens_and_final(&out);
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["answer"], ANSWER);
    assert_eq!(tokens.concat(), ANSWER);
    assert_eq!(run["metadata"]["model_calls"], 7);

    let calls = server.recorded();
    assert_eq!(calls.len(), 7);
    for call in &calls {
        let thinking = &call.body["additionalModelRequestFields"]["thinking"];
        assert_eq!(thinking["budget_tokens"], 1024, "{}", call.body);
        assert_eq!(call.max_tokens(), Some(base_cap(call.name()) + 1024));
        assert!(call.body["inferenceConfig"]["temperature"].is_null());
        if call.name() != "generate_answer" {
            assert!(
                call.body["toolConfig"]["toolChoice"]["auto"].is_object(),
                "{}",
                call.body
            );
        }
    }

    // Under Claude's minimum budget, the binary does not start and says why.
    let env = [
        ("LLM_PROVIDER", "bedrock"),
        ("LLM_MODEL", CLAUDE),
        ("LLM_REASONING_EFFORT", "medium"),
        ("LLM_REASONING_TOKENS", "512"),
    ];
    let out = support::bin::run(dir.path(), &server.env(), &env, &ask);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("LLM_REASONING_TOKENS=512"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.total_calls(), 7, "no call made");
}
