//! The `bounded-rag` binary with Amazon Bedrock, black-box: the scripted Bedrock runtime is
//! reached through `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` with fake static credentials and no key.
//! A streamed answer (`ConverseStream`) arrives before the run ends with its tokens reported;
//! Titan embeddings (`InvokeModel`) build a bundle that records them, serve hybrid queries, and
//! a bundle of other embeddings is a clear start-up error.

use crate::support;

use crate::support::happy_path::QUESTION;
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use support::bedrock_server::{embed_exception, vectors, BedrockScript, ScriptedBedrock};
use support::llm_server::{Reply, Script};

const CHAT_MODEL: &str = "us.anthropic.claude-3-5-haiku-20241022-v1:0";
const EMBED_MODEL: &str = "amazon.titan-embed-text-v2:0";

fn cli(state: &Path, server: &ScriptedBedrock, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut vars = vec![("RUST_LOG", "bounded_rag=info")];
    vars.extend_from_slice(env);
    support::bin::run(state, &server.env(), &vars, args)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn a_bedrock_answer_streams_its_tokens_before_the_run_ends_and_reports_its_usage() {
    let script = Script::defaults().on(
        "generate_answer",
        [Reply::answer("Scripted answer [1].").chunked(5)],
    );
    let server = ScriptedBedrock::start_in_thread(BedrockScript::new(script));
    let dir = tempfile::tempdir().unwrap();
    let env = [("LLM_PROVIDER", "bedrock"), ("LLM_MODEL", CHAT_MODEL)];
    let out = cli(
        dir.path(),
        &server,
        &env,
        &["ask", "--stream", "--json", QUESTION],
    );
    assert!(out.status.success(), "{}", stderr(&out));

    let lines = json_lines(&out);
    let names: Vec<String> = lines
        .iter()
        .map(|l| match l["event"].as_str().unwrap() {
            "step" => format!("step:{}", l["data"]["name"].as_str().unwrap()),
            other => other.to_owned(),
        })
        .collect();
    let tokens: Vec<usize> = (0..names.len()).filter(|i| names[*i] == "token").collect();
    // The answer's JSON arrives in 5-character tool-input deltas: several token events, all
    // before the generate step is recorded, and so before the run ends.
    assert!(tokens.len() > 2, "{names:?}");
    let generate = names.iter().position(|n| n == "step:generate").unwrap();
    assert!(tokens.iter().all(|i| *i < generate), "{names:?}");
    assert_eq!(names.last().map(String::as_str), Some("final"));
    let streamed: String = tokens
        .iter()
        .map(|i| lines[*i]["data"]["text"].as_str().unwrap())
        .collect();
    let last = &lines.last().unwrap()["data"];
    assert_eq!(last["status"], "completed");
    assert_eq!(streamed, last["answer"].as_str().unwrap());
    assert_eq!(streamed, "Scripted answer [1].");

    // Tokens come from Converse's usage: 7 calls of 100 + 10.
    assert_eq!(last["metadata"]["model_calls"], 7);
    assert_eq!(last["metadata"]["tokens"]["prompt"], 700);
    assert_eq!(last["metadata"]["tokens"]["completion"], 70);
    assert_eq!(last["metadata"]["tokens"]["total"], 770);
    assert_eq!(last["metadata"]["tokens"]["estimated"], false);

    // Only the answer streams; every call names the model, and every decision forces its task's
    // tool.
    let calls = server.recorded();
    assert_eq!(calls.len(), 7);
    for call in &calls {
        let model = call.path.split('/').nth(2).unwrap();
        assert!(model.starts_with("us.anthropic.claude"), "{}", call.path);
        assert_eq!(
            call.streamed(),
            call.name() == "generate_answer",
            "{}",
            call.path
        );
        if call.name() == "generate_answer" {
            // The answer is plain text: no tool, its own cap.
            assert!(call.body["toolConfig"].is_null(), "{}", call.body);
            assert_eq!(call.max_tokens(), Some(1024));
        } else {
            assert_eq!(
                call.body["toolConfig"]["tools"][0]["toolSpec"]["name"],
                call.name()
            );
        }
        assert!(call.body.to_string().contains(QUESTION));
        assert!(call
            .authorization
            .as_deref()
            .unwrap()
            .starts_with("AWS4-HMAC-SHA256"));
    }
}

#[test]
fn a_bedrock_validation_error_fails_the_run_once_with_what_to_fix() {
    let script = Script::defaults().on(
        "route_query",
        [Reply::status(400).body(
            "ValidationException: This model doesn't support the toolConfig.toolChoice.tool field",
        )],
    );
    let server = ScriptedBedrock::start_in_thread(BedrockScript::new(script));
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("LLM_PROVIDER", "bedrock"),
        ("LLM_MODEL", "meta.llama3-8b-instruct-v1:0"),
        // The sequential path: routing is the run's only call before it fails (speculation
        // would have grading and an answer in flight beside it).
        ("SPECULATION", "off"),
    ];
    let out = cli(dir.path(), &server, &env, &["ask", "--json", QUESTION]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"failed\""), "{text} {}", stderr(&out));
    assert!(text.contains("ValidationException"), "{text}");
    assert!(text.contains("forced tool choice"), "{text}");
    assert_eq!(server.total_calls(), 1);
}

#[test]
fn the_response_cache_answers_a_repeated_bedrock_run_without_a_call() {
    let server = ScriptedBedrock::start_in_thread(BedrockScript::new(Script::defaults()));
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("LLM_PROVIDER", "bedrock"),
        ("LLM_MODEL", CHAT_MODEL),
        ("LLM_CACHE_TTL_SECONDS", "3600"),
    ];
    let first = cli(dir.path(), &server, &env, &["ask", "--json", QUESTION]);
    assert!(first.status.success(), "{}", stderr(&first));
    let first: Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(first["metadata"]["model_calls"], 7);
    assert_eq!(server.total_calls(), 7);

    let second = cli(dir.path(), &server, &env, &["ask", "--json", QUESTION]);
    assert!(second.status.success(), "{}", stderr(&second));
    let second: Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(server.total_calls(), 7, "no call in the second run");
    assert_eq!(second["metadata"]["model_calls"], 0);
    assert_eq!(second["metadata"]["cache_hits"], 7);
    assert_eq!(second["answer"], first["answer"]);
}

fn write_docs(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("canker.md"),
        "# Patch canker\n\nPatch canker shows as bark lesions that ooze on the trunk. \
         Phytophthora palmivora causes it; phosphonate injections control it.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("pests.md"),
        "# Mealybugs\n\nMealybugs are sap-sucking insects tended by ants on young fruit.\n",
    )
    .unwrap();
}

#[test]
fn titan_embeddings_build_a_bundle_that_records_them_and_serve_hybrid_queries() {
    // The first InvokeModel is throttled: the ingest retries that batch once.
    let script = BedrockScript::new(Script::defaults())
        .embeddings([embed_exception(429, "ThrottlingException"), vectors()]);
    let server = ScriptedBedrock::start_in_thread(script);
    let dir = tempfile::tempdir().unwrap();
    let (docs, kb) = (dir.path().join("docs"), dir.path().join("kb"));
    write_docs(&docs);
    let embeddings = [
        ("EMBEDDINGS_PROVIDER", "bedrock"),
        ("EMBEDDINGS_MODEL", EMBED_MODEL),
        ("EMBEDDINGS_DIMENSIONS", "256"),
    ];
    let (docs_arg, kb_arg) = (docs.to_str().unwrap(), kb.to_str().unwrap());
    let out = cli(
        dir.path(),
        &server,
        &embeddings,
        &["ingest", docs_arg, "--out", kb_arg, "--batch-size", "1"],
    );
    assert!(out.status.success(), "{}", stderr(&out));

    let manifest: Value =
        serde_json::from_slice(&std::fs::read(kb.join("kb-manifest.json")).unwrap()).unwrap();
    let passages = manifest["counts"]["passages"].as_u64().unwrap() as usize;
    assert!(passages >= 2, "{manifest}");
    assert_eq!(manifest["embedding"]["provider"], "bedrock");
    assert_eq!(manifest["embedding"]["model"], EMBED_MODEL);
    assert_eq!(manifest["embedding"]["dimensions"], 256);
    // One call per passage, plus the throttled one.
    let ingested = server.embedded();
    assert_eq!(ingested.len(), passages + 1);
    assert_eq!(ingested[0], ingested[1], "the throttled text is sent again");
    for call in server.recorded() {
        assert!(call.path.ends_with("/invoke"), "{}", call.path);
        assert_eq!(call.body["dimensions"], 256);
        assert_eq!(call.body["normalize"], true);
    }

    // A query embeds the question once and ranks hybrid.
    server.clear();
    let mut env = embeddings.to_vec();
    env.push(("KB_PATH", kb_arg));
    let out = cli(
        dir.path(),
        &server,
        &env,
        &["ask", "--json", "Why does the trunk ooze?"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["metadata"]["retrieval"], "hybrid", "{v}");
    assert!(
        v["citations"][0]["url"]
            .as_str()
            .unwrap()
            .contains("canker.md"),
        "{v}"
    );
    assert_eq!(server.embedded(), ["Why does the trunk ooze?"]);

    // Embeddings of another size or provider than the bundle's: a clear start-up error.
    server.clear();
    let mut other_size = env.clone();
    other_size[2] = ("EMBEDDINGS_DIMENSIONS", "512");
    let out = cli(
        dir.path(),
        &server,
        &other_size,
        &["ask", "--json", QUESTION],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("incompatible bundle")
            && err.contains("256 dimensions")
            && err.contains("EMBEDDINGS_DIMENSIONS"),
        "{err}"
    );
    let openai = [
        ("EMBEDDINGS_BASE_URL", "http://127.0.0.1:9/v1"),
        ("EMBEDDINGS_MODEL", EMBED_MODEL),
        ("KB_PATH", kb_arg),
    ];
    let out = cli(dir.path(), &server, &openai, &["ask", "--json", QUESTION]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("provider `bedrock`") && err.contains("EMBEDDINGS_PROVIDER is `openai`"),
        "{err}"
    );
    assert_eq!(server.total_calls(), 0, "refused before any call");
}
