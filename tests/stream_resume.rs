//! Resumable streams, black-box: the `stream` binary under `cargo lambda watch` (function URL
//! emulation, `RESPONSE_STREAM`), moto's DynamoDB and the scripted model holding the answer
//! call. A client reads the first steps of `POST /workflow/run`, drops the connection, and
//! picks the run back up with `GET /workflow/runs/{run_id}/events` and `Last-Event-ID`: every
//! step arrives exactly once across the two streams, and the second ends with `final`.
//!
//! Needs `scripts/setup-test-tools.sh` (moto_server and cargo-lambda in `.local/venv`).

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::happy_path::{QUESTION, SPECULATED_STEPS};
use support::lambda_watch::LambdaWatch;
use support::llm_server::{Reply, Script, ScriptedLlm};
use support::moto::moto;
use support::scripted_http::Hold;
use support::sse::Events;

#[tokio::test]
async fn a_stream_resumed_with_last_event_id_gets_each_step_exactly_once() {
    let moto = moto().await;
    let table = moto.create_table().await;
    let hold = Hold::new();
    let llm = ScriptedLlm::start(Script::defaults().on(
        "generate_answer",
        [Reply::answer("Scripted answer [1].").held(&hold)],
    ))
    .await;
    let mut env = moto.function_env();
    env.extend([
        ("CHECKPOINT_TABLE", table),
        ("LLM_PROVIDER", "openai".to_owned()),
        ("LLM_BASE_URL", llm.base_url()),
        ("RUST_LOG", "bounded_rag=debug,warn".to_owned()),
    ]);
    let watch = LambdaWatch::start(&env).await;

    // The first stream: read up to the held answer call, then drop the connection.
    let response = watch
        .url_stream(
            "stream",
            "/workflow/run",
            &json!({ "question": QUESTION }).to_string(),
            &[("content-type", "application/json")],
        )
        .await;
    assert_eq!(response.status(), 200);
    let run_id = response.headers()["x-run-id"].to_str().unwrap().to_owned();
    let mut first = Events::new(response);
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = first.next().await.expect("a step before the held call");
        assert_eq!(event.name, "step", "{event:?}");
        assert_eq!(
            event.id,
            event.data["counters"]["steps"].to_string(),
            "{event:?}"
        );
        seen.push(event);
    }
    let last_id = seen.last().unwrap().id.clone();
    assert_eq!(last_id, "2");
    drop(first);
    // The run goes on to its held `generate` call (step 3 is checkpointed by then).
    support::wait_until(|| llm.calls("generate_answer") == 1).await;
    assert_eq!(llm.calls("generate_answer"), 1);

    // Resume: step 3 is replayed, the run is followed live once released, and ends `final`.
    let url = format!(
        "{}/lambda-url/stream/workflow/runs/{run_id}/events",
        watch.endpoint()
    );
    let http = bounded_rag::tls::reqwest_builder()
        .no_proxy()
        .build()
        .unwrap();
    let response = http
        .get(url)
        .header("last-event-id", &last_id)
        .timeout(Duration::from_secs(120))
        .send()
        .await
        .expect("GET events");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    let mut second = Events::new(response);
    let replayed = second.next().await.expect("step 3 replayed");
    assert_eq!(
        (replayed.name.as_str(), replayed.id.as_str()),
        ("step", "3")
    );
    hold.release();
    let mut rest = vec![replayed];
    while let Some(event) = second.next().await {
        rest.push(event);
    }
    let last = rest.pop().expect("a last event");
    assert_eq!(last.name, "final", "{last:?}");
    assert_eq!(last.id, "6.end");
    assert_eq!(last.data["status"], "completed", "{last:?}");
    assert!(
        rest.iter().all(|e| e.name == "step"),
        "tokens are live only: {rest:?}"
    );

    let ids: Vec<String> = seen.iter().chain(&rest).map(|e| e.id.clone()).collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5", "6"]);
    let names: Vec<&str> = seen
        .iter()
        .chain(&rest)
        .map(|e| e.data["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, SPECULATED_STEPS);
    assert_eq!(rest.last().unwrap().data["counters"]["model_calls"], 7);
    assert_eq!(llm.total_calls(), 7, "the run ran once");

    // A finished run replays what is asked and ends; a bad id and an unknown run are refused.
    let replay = http
        .get(format!(
            "{}/lambda-url/stream/workflow/runs/{run_id}/events",
            watch.endpoint()
        ))
        .header("last-event-id", "5.3")
        .send()
        .await
        .unwrap();
    let mut replay = Events::new(replay);
    let six = replay.next().await.unwrap();
    assert_eq!((six.name.as_str(), six.id.as_str()), ("step", "6"));
    assert_eq!(replay.next().await.unwrap().name, "final");
    assert!(replay.next().await.is_none());
    let bad = http
        .get(format!(
            "{}/lambda-url/stream/workflow/runs/{run_id}/events",
            watch.endpoint()
        ))
        .header("last-event-id", "nope")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let missing = http
        .get(format!(
            "{}/lambda-url/stream/workflow/runs/no-such-run/events",
            watch.endpoint()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}
