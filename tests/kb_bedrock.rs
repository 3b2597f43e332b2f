//! An Amazon Bedrock knowledge base as the store (`KB_URI=bedrock-kb://ID`) and Bedrock's
//! `Rerank` (`RERANK_PROVIDER=bedrock`), black-box through the `bounded-rag` binary against a
//! scripted Agents for Bedrock runtime in its REST-JSON wire format: the exact requests sent
//! (results asked for, search type, filters), citations with S3 locations and pages, retries
//! of transient failures only, and the exact calls of each case.

use crate::support;

use crate::support::happy_path::QUESTION;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Output;
use support::agent_server::{AgentReply, Answer, Passage, ScriptedAgent};
use support::scripted_http::Reply;

fn cli(state: &Path, server: &ScriptedAgent, env: &[(&str, &str)], args: &[&str]) -> Output {
    // The sequential path's exact calls.
    let mut vars = vec![("SPECULATION", "off")];
    vars.extend_from_slice(env);
    support::bin::run(state, &server.env(), &vars, args)
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn passages() -> Vec<Passage> {
    vec![
        Passage::new(
            "s3://docs/guides/field-guide.pdf",
            "Patch canker of durian is caused by Phytophthora palmivora, a water mould.",
            0.9,
        )
        .on_page(3),
        Passage::new(
            "s3://docs/guides/field-guide.pdf",
            "Patch canker lesions on durian bark ooze a reddish liquid.",
            0.8,
        )
        .on_page(4),
        Passage::new(
            "s3://docs/guides/field-guide.pdf",
            "Patch canker in durian spreads in wet weather.",
            0.7,
        )
        .on_page(5),
        Passage::new(
            "s3://docs/notes/orchard.md",
            "Durian patch canker is managed by drainage and phosphonate.",
            0.6,
        ),
    ]
}

#[test]
fn a_bedrock_knowledge_base_is_asked_once_with_its_filters_and_cited_by_location_and_page() {
    let server = ScriptedAgent::retrieve([Reply::Ok(Answer::Retrieve(passages()))]);
    let dir = tempfile::tempdir().unwrap();
    let env = [("KB_URI", "bedrock-kb://KB12345678?search=hybrid")];
    let out = cli(
        dir.path(),
        &server,
        &env,
        &[
            "ask",
            QUESTION,
            "--json",
            "--filter",
            "region=my",
            "--filter",
            "crop=durian",
        ],
    );
    let run = json_of(&out);
    assert_eq!(run["status"], "completed", "{run}");
    let calls = server.recorded();
    assert_eq!(calls.len(), 1, "one Retrieve per knowledge-base step");
    assert_eq!(calls[0].path, "/knowledgebases/KB12345678/retrieve");
    assert_eq!(
        calls[0].body["retrievalQuery"],
        json!({"text": QUESTION, "type": "TEXT"})
    );
    assert_eq!(
        calls[0].body["retrievalConfiguration"]["vectorSearchConfiguration"],
        json!({
            // 3 documents wanted, 3 times as many asked for: at most 2 per document are kept.
            "numberOfResults": 9,
            "overrideSearchType": "HYBRID",
            "filter": {"andAll": [
                {"equals": {"key": "region", "value": "my"}},
                {"equals": {"key": "crop", "value": "durian"}}
            ]}
        })
    );
    let urls: Vec<&str> = run["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["url"].as_str().unwrap())
        .collect();
    assert!(
        urls.contains(&"s3://docs/guides/field-guide.pdf#page=3"),
        "{urls:?}"
    );
    assert!(
        !urls.contains(&"s3://docs/guides/field-guide.pdf#page=5"),
        "the third passage of one document is capped: {urls:?}"
    );
}

#[test]
fn transient_failures_are_retried_and_a_validation_error_is_not() {
    let flaky: Vec<AgentReply> = vec![
        Reply::status(503),
        Reply::status(429),
        Reply::Ok(Answer::Retrieve(passages())),
    ];
    let server = ScriptedAgent::retrieve(flaky);
    let dir = tempfile::tempdir().unwrap();
    let env = [("KB_URI", "bedrock-kb://KB1")];
    let out = cli(dir.path(), &server, &env, &["ask", QUESTION, "--json"]);
    let run = json_of(&out);
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        server.recorded().len(),
        3,
        "two transient failures, then the answer"
    );
    assert!(
        server.recorded()[0].body["retrievalConfiguration"]["vectorSearchConfiguration"]
            .get("overrideSearchType")
            .is_none(),
        "without ?search= Bedrock chooses"
    );

    let server = ScriptedAgent::retrieve([Reply::status(400)]);
    let out = cli(dir.path(), &server, &env, &["ask", QUESTION, "--json"]);
    let run = json_of(&out);
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(
        server.recorded().len(),
        1,
        "a permanent error is never retried"
    );
    let text = run.to_string();
    assert!(text.contains("ValidationException"), "{text}");
    assert!(text.contains("check KB_URI"), "{text}");
}

#[test]
fn an_unknown_store_scheme_is_a_start_up_error_naming_the_accepted_ones() {
    let server = ScriptedAgent::retrieve([]);
    let dir = tempfile::tempdir().unwrap();
    let out = cli(
        dir.path(),
        &server,
        &[("KB_URI", "mysql://db.example.com/kb")],
        &["ask", QUESTION],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("KB_URI"), "{err}");
    assert!(err.contains("bedrock-kb://KNOWLEDGE_BASE_ID"), "{err}");
    assert!(server.recorded().is_empty());
}

#[test]
fn bedrock_rerank_reorders_once_per_retrieval_and_retries_throttling() {
    let server = ScriptedAgent::rerank([Reply::status(429), Reply::Ok(Answer::Reversed)]);
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("RERANK_PROVIDER", "bedrock"),
        ("RERANK_MODEL", "amazon.rerank-v1:0"),
    ];
    let out = cli(dir.path(), &server, &env, &["ask", QUESTION, "--json"]);
    let run = json_of(&out);
    assert_eq!(run["status"], "completed", "{run}");
    let calls = server.recorded();
    assert_eq!(calls.len(), 2, "one throttled call, then the ranking");
    let config = &calls[1].body["rerankingConfiguration"];
    assert_eq!(config["type"], "BEDROCK_RERANKING_MODEL");
    assert_eq!(
        config["bedrockRerankingConfiguration"],
        json!({
            "numberOfResults": 3,
            "modelConfiguration": {
                "modelArn": "arn:aws:bedrock:us-east-1::foundation-model/amazon.rerank-v1:0"
            }
        })
    );
    assert_eq!(calls[1].body["queries"][0]["textQuery"]["text"], QUESTION);
    let sources = calls[1].body["sources"].as_array().unwrap();
    assert!(
        sources.len() > 3,
        "more candidates than kept: {}",
        sources.len()
    );
    assert_eq!(sources[0]["type"], "INLINE");
    assert_eq!(
        run["metadata"]["retrieval"], "bm25+rerank",
        "{}",
        run["metadata"]
    );
}

#[test]
fn bedrock_rerank_without_a_model_is_a_start_up_error() {
    let server = ScriptedAgent::rerank([]);
    let dir = tempfile::tempdir().unwrap();
    let out = cli(
        dir.path(),
        &server,
        &[("RERANK_PROVIDER", "bedrock")],
        &["ask", QUESTION],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("RERANK_MODEL"), "{err}");
    assert!(server.recorded().is_empty());
}
