//! The `stream` Lambda binary (a function URL in `RESPONSE_STREAM` mode) through `cargo lambda
//! watch`'s function URL emulation, against moto's DynamoDB and a scripted OpenAI-compatible
//! server that streams the answer: the order and content of the server-sent events of a
//! completed run and of a run whose first answer is discarded, a client that disconnects
//! mid-stream (the run still completes, once), and exact model calls.
//!
//! Needs `scripts/setup-test-tools.sh` (moto_server and cargo-lambda in `.local/venv`).

use crate::support;

use crate::support::happy_path::QUESTION;
use serde_json::{json, Value};
use std::time::Duration;
use support::lambda_watch::LambdaWatch;
use support::llm_server::{Reply, Script, ScriptedLlm};
use support::moto::{moto, Moto};
use support::sse::{Event, Events};

const ANSWER: &str = "Patch canker is caused by Phytophthora palmivora [1].";
const SECOND: &str = "Phytophthora palmivora causes patch canker on the trunk [2].";

fn env(moto: &Moto, table: &str, llm: &ScriptedLlm) -> Vec<(&'static str, String)> {
    let mut env = moto.function_env();
    env.extend([
        ("CHECKPOINT_TABLE", table.to_owned()),
        ("LLM_PROVIDER", "openai".to_owned()),
        ("LLM_BASE_URL", llm.base_url()),
        // The sequential path's exact events (speculation's are tested in `rag`).
        ("SPECULATION", "off".to_owned()),
        ("RUST_LOG", "bounded_rag=debug,warn".to_owned()),
    ]);
    env
}

/// Event names, with the step name for `step` events (`step:generate`).
fn names(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e.name.as_str() {
            "step" => format!("step:{}", e.data["name"].as_str().unwrap_or("?")),
            "token" => format!("token:{}", e.data["attempt"]),
            other => other.to_owned(),
        })
        .collect::<Vec<_>>()
        .into_iter()
        // consecutive tokens of one attempt count once
        .fold(Vec::new(), |mut acc, name| {
            if !(name.starts_with("token:") && acc.last() == Some(&name)) {
                acc.push(name);
            }
            acc
        })
}

fn text_of(events: &[Event], attempt: u64) -> String {
    events
        .iter()
        .filter(|e| e.name == "token" && e.data["attempt"] == attempt)
        .map(|e| e.data["text"].as_str().unwrap_or_default())
        .collect()
}

async fn start(script: Script) -> (ScriptedLlm, LambdaWatch) {
    let moto = moto().await;
    let table = moto.create_table().await;
    let llm = ScriptedLlm::start(script).await;
    let watch = LambdaWatch::start(&env(moto, &table, &llm)).await;
    (llm, watch)
}

async fn post_run(watch: &LambdaWatch) -> reqwest::Response {
    let body = json!({ "question": QUESTION }).to_string();
    let response = watch
        .url_stream(
            "stream",
            "/workflow/run",
            &body,
            &[("content-type", "application/json")],
        )
        .await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    response
}

#[tokio::test]
async fn a_completed_run_streams_steps_tokens_and_the_final_answer_in_order() {
    // The answer is streamed in 6-character pieces, 150 ms apart, so it is still being
    // written while the first pieces reach the client.
    let script = Script::defaults().on(
        "generate_answer",
        [Reply::answer(ANSWER)
            .chunked(6)
            .every(Duration::from_millis(150))],
    );
    let (llm, watch) = start(script).await;
    let response = post_run(&watch).await;
    let run_id = response.headers()["x-run-id"].to_str().unwrap().to_owned();
    let mut events = Events::new(response);

    let mut seen = Vec::new();
    loop {
        let event = events.next().await.expect("a token before the end");
        let is_token = event.name == "token";
        seen.push(event);
        if is_token {
            break;
        }
    }
    // The first piece arrived while the answer was still being generated: no step after
    // `generate` has asked the model anything yet.
    assert_eq!(
        llm.calls("grade_hallucinations"),
        0,
        "the stream was buffered"
    );
    seen.extend(events.all().await);

    assert_eq!(
        names(&seen),
        [
            "step:route_question",
            "step:kg_retrieval",
            "step:grade_documents",
            "token:1",
            "step:generate",
            "step:grade_hallucinations",
            "step:grade_answer",
            "final",
        ]
    );
    assert!(
        seen.iter().filter(|e| e.name == "token").count() > 3,
        "the answer came in pieces"
    );
    assert_eq!(text_of(&seen, 1), ANSWER);
    let last = &seen.last().unwrap().data;
    assert_eq!(last["status"], "completed");
    assert_eq!(last["run_id"], run_id.as_str());
    assert_eq!(last["answer"], ANSWER);
    assert_eq!(last["metadata"]["model_calls"], 7);
    assert_eq!(last["metadata"]["tokens"]["total"], 7 * 110);
    assert_eq!(last["metadata"]["tokens"]["estimated"], false);
    // Step events carry the counters after each step.
    let grade_docs = &seen[2].data;
    assert_eq!(grade_docs["counters"]["steps"], 3);
    assert_eq!(grade_docs["counters"]["model_calls"], 4);
    assert_eq!(grade_docs["details"]["model_calls"], 3);
    // Only the answer call streams; structured calls do not.
    for call in llm.recorded() {
        assert_eq!(
            call.streamed(),
            call.name() == "generate_answer",
            "{}",
            call.name()
        );
    }
    assert_eq!(llm.total_calls(), 7);
}

#[tokio::test]
async fn an_answer_cut_at_its_cap_streams_as_written_and_ends_best_effort_answer_length() {
    let script = Script::defaults().on(
        "generate_answer",
        [Reply::answer(ANSWER).chunked(8).at_cap()],
    );
    let (llm, watch) = start(script).await;
    let seen = Events::new(post_run(&watch).await).all().await;
    assert_eq!(text_of(&seen, 1), ANSWER, "every streamed token is kept");
    let last = &seen.last().unwrap();
    assert_eq!(last.name, "final");
    assert_eq!(last.data["status"], "best_effort");
    assert_eq!(
        last.data["metadata"]["limits_hit"],
        serde_json::json!(["answer_length"])
    );
    assert!(
        last.data["answer"].as_str().unwrap().starts_with(ANSWER),
        "{}",
        last.data["answer"]
    );
    assert_eq!(last.data["metadata"]["model_calls"], 7);
    assert_eq!(llm.calls("generate_answer"), 1);
    assert_eq!(llm.total_calls(), 7);
}

#[tokio::test]
async fn a_discarded_first_answer_is_announced_before_the_second_attempt() {
    let script = Script::defaults()
        .on("grade_hallucinations", [Reply::no(), Reply::yes()])
        .on(
            "generate_answer",
            [
                Reply::answer(ANSWER).chunked(8),
                Reply::answer(SECOND).chunked(8),
            ],
        );
    let (llm, watch) = start(script).await;
    let events = Events::new(post_run(&watch).await).all().await;
    assert_eq!(
        names(&events),
        [
            "step:route_question",
            "step:kg_retrieval",
            "step:grade_documents",
            "token:1",
            "step:generate",
            "discarded",
            "step:grade_hallucinations",
            "token:2",
            "step:generate",
            "step:grade_hallucinations",
            "step:grade_answer",
            "final",
        ]
    );
    let discarded = events.iter().find(|e| e.name == "discarded").unwrap();
    assert_eq!(discarded.data, json!({ "attempt": 1 }));
    assert_eq!(
        (text_of(&events, 1), text_of(&events, 2)),
        (ANSWER.to_owned(), SECOND.to_owned())
    );
    let last = &events.last().unwrap().data;
    assert_eq!(last["status"], "completed");
    // The answer's one citation is its first: `[2]` renumbered `[1]`.
    assert_eq!(last["answer"], SECOND.replace("[2]", "[1]"));
    assert_eq!(last["metadata"]["hallucination_retry_count"], 1);
    // route 1 + 3 document grades + 2 answers + 2 groundedness checks + 2 answer checks
    // (asked with each groundedness check)
    assert_eq!(llm.total_calls(), 10);
    assert_eq!(last["metadata"]["model_calls"], 10);
}

#[tokio::test]
async fn a_client_that_disconnects_mid_stream_does_not_stop_the_run() {
    let script = Script::defaults().on(
        "generate_answer",
        [Reply::answer(ANSWER)
            .chunked(4)
            .every(Duration::from_millis(100))],
    );
    let (llm, watch) = start(script).await;
    let response = post_run(&watch).await;
    let run_id = response.headers()["x-run-id"].to_str().unwrap().to_owned();
    let mut events = Events::new(response);
    while let Some(event) = events.next().await {
        if event.name == "token" {
            break;
        }
    }
    drop(events); // the client goes away while the answer is being written

    let mut status = Value::Null;
    for _ in 0..600 {
        let answer = watch
            .url_request("api", "GET", &format!("/workflow/runs/{run_id}"), None, &[])
            .await;
        status = answer.json();
        if status["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status["status"], "completed", "{status:#}");
    assert_eq!(status["answer"], ANSWER);
    assert_eq!(status["metadata"]["total_steps"], 6);
    // Advanced once: every node's model calls exactly once.
    assert_eq!(llm.calls("route_query"), 1);
    assert_eq!(llm.calls("grade_documents"), 3);
    assert_eq!(llm.calls("generate_answer"), 1);
    assert_eq!(llm.calls("grade_hallucinations"), 1);
    assert_eq!(llm.calls("grade_answer"), 1);
    assert_eq!(llm.total_calls(), 7);
}

#[tokio::test]
async fn errors_before_the_run_are_plain_json_and_other_routes_are_served() {
    let (llm, watch) = start(Script::defaults()).await;
    let bad = watch
        .url_request(
            "stream",
            "POST",
            "/workflow/run",
            Some(r#"{"question":""}"#),
            &[],
        )
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["field"], "question");
    let missing = watch
        .url_request(
            "stream",
            "GET",
            "/workflow/runs/00000000-0000-4000-8000-000000000001",
            None,
            &[],
        )
        .await;
    assert_eq!(missing.status, 404);
    assert_eq!(llm.total_calls(), 0);
}
