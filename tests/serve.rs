//! `bounded-rag serve` over HTTP without a browser: it answers `POST /workflow/run` as the `api`
//! function (JSON) or as the `stream` function (server-sent events, when asked for them),
//! processes asynchronous runs with its in-process worker, serves the page, a run's cited
//! passages and the handlers' own 404, and stops on Ctrl-C. Also `bounded-rag graph`.

use crate::playground::server;

use crate::support::happy_path::SPECULATED_STEPS as STEPS;
use serde_json::Value;
use server::Serve;
use std::process::Command;
use std::time::Duration;

const QUESTION: &str = r#"{"question":"What causes patch canker in durian?"}"#;

fn http() -> reqwest::Client {
    bounded_rag::tls::reqwest_builder().build().unwrap()
}

fn names(run: &Value) -> Vec<&str> {
    run["workflow_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_run_is_json_for_api_clients_and_events_for_stream_clients() {
    let serve = Serve::start(&[]);
    let url = format!("{}workflow/run", serve.url);
    let response = http().post(&url).body(QUESTION).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let run: Value = response.json().await.unwrap();
    assert_eq!(
        (run["status"].as_str(), names(&run)),
        (Some("completed"), STEPS.to_vec())
    );

    let response = http()
        .post(&url)
        .header("accept", "text/event-stream")
        .body(QUESTION)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let run_id = response.headers()["x-run-id"].to_str().unwrap().to_owned();
    let text = response.text().await.unwrap();
    let frames: Vec<(String, String, Value)> = text
        .split("\n\n")
        .filter(|f| !f.is_empty())
        .map(|frame| {
            let field = |name: &str| {
                frame
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .unwrap()
                    .to_owned()
            };
            let data = serde_json::from_str(&field("data: ")).unwrap();
            (field("id: "), field("event: "), data)
        })
        .collect();
    let steps: Vec<(&str, &str)> = frames
        .iter()
        .filter(|(_, event, _)| event == "step")
        .map(|(id, _, data)| (id.as_str(), data["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        steps,
        [
            ("1", STEPS[0]),
            ("2", STEPS[1]),
            ("3", STEPS[2]),
            ("4", STEPS[3]),
            ("5", STEPS[4]),
            ("6", STEPS[5])
        ]
    );
    assert_eq!(frames.iter().filter(|(_, e, _)| e == "token").count(), 1);
    let (last_id, last, body) = frames.last().unwrap();
    assert_eq!((last_id.as_str(), last.as_str()), ("6.end", "final"));
    assert_eq!(
        (body["run_id"].as_str(), body["status"].as_str()),
        (Some(run_id.as_str()), Some("completed"))
    );
}

#[tokio::test]
async fn an_asynchronous_run_is_processed_by_the_in_process_worker() {
    let serve = Serve::start(&[]);
    let response = http()
        .post(format!("{}workflow/runs", serve.url))
        .body(QUESTION)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    let accepted: Value = response.json().await.unwrap();
    let status_url = format!(
        "{}{}",
        serve.url,
        &accepted["status_url"].as_str().unwrap()[1..]
    );
    // At most 100 reads, 100 ms apart (a bound, not a measurement).
    let mut run = Value::Null;
    for _ in 0..100 {
        run = http()
            .get(&status_url)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if run["status"] != "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["run_id"], accepted["run_id"]);
    assert_eq!(names(&run), STEPS);
}

#[tokio::test]
async fn the_page_the_handlers_404_and_ctrl_c() {
    let mut serve = Serve::start(&[]);
    assert!(serve.banner[0].starts_with("bounded-rag: serving http://127.0.0.1:"));
    assert_eq!(
        serve.banner[1],
        "bounded-rag: listening on loopback only; --host 0.0.0.0 listens on every interface"
    );
    let page = http().get(&serve.url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    let policy = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(policy.starts_with("default-src 'none';") && policy.contains("connect-src 'self'"));
    let html = page.text().await.unwrap();
    assert!(html.contains(
        r#""fork":{"at":"speculate","branches":["route_question","grade_documents","generate"]}"#
    ));

    let missing = http()
        .get(format!("{}nope", serve.url))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["error"], "not_found");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .starts_with("no route for /nope; the routes are POST /workflow/run"));

    // The playground's own route: a run's cited passages, refused as the API refuses.
    let run: Value = http()
        .post(format!("{}workflow/run", serve.url))
        .body(QUESTION)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let passages_of = |id: &str| format!("{}playground/runs/{id}/passages", serve.url);
    let response = http()
        .get(passages_of(run["run_id"].as_str().unwrap()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    let urls: Vec<&str> = body["passages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["url"].as_str().unwrap())
        .collect();
    let cited: Vec<&str> = run["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["url"].as_str().unwrap())
        .collect();
    assert_eq!(urls, cited);
    assert!(body["passages"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Patch canker is caused by Phytophthora palmivora"));
    let unknown = http().get(passages_of("no-such-run")).send().await.unwrap();
    assert_eq!(unknown.status(), 404);
    let bad = http().get(passages_of("a%20b")).send().await.unwrap();
    assert_eq!(bad.status(), 400);

    let (status, rest) = serve.interrupt();
    assert_eq!(status.code(), Some(0));
    // After the banner: one EMF metrics line per finished run (as the functions print them for
    // CloudWatch), then the last line.
    let (last, metrics) = rest.split_last().unwrap();
    assert_eq!(last, "bounded-rag: stopped");
    assert_eq!(metrics.len(), 1, "{metrics:?}");
    let emf: Value = serde_json::from_str(&metrics[0]).unwrap();
    assert_eq!(
        (emf["run_id"].as_str(), emf["Status"].as_str()),
        (run["run_id"].as_str(), Some("completed"))
    );
}

#[test]
fn graph_prints_the_versioned_shape_as_mermaid_or_dot() {
    let graph = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_bounded-rag"))
            .arg("graph")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let mermaid = graph(&[]);
    assert_eq!(mermaid, graph(&["--format", "mermaid"]));
    assert!(mermaid.starts_with("flowchart TD\n    start([start])\n    finish([end])\n"));
    assert_eq!(mermaid.lines().filter(|l| l.contains("-->")).count(), 41);
    assert_eq!(
        mermaid
            .matches("|\"query_transformation_retry_count < MAX_RETRIES\"|")
            .count(),
        5
    );
    assert!(mermaid.contains("    grade_hallucinations -->|\"hallucination_retry_count < MAX_REGENERATIONS\"| generate\n"));
    assert!(mermaid.contains("    speculate -.->|branch| grade_documents\n"));
    let dot = graph(&["--format", "dot"]);
    assert!(dot.starts_with("digraph bounded_rag {\n"));
    assert_eq!(dot.matches(" -> ").count(), 41 + 3);
}
