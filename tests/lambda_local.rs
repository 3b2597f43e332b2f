//! The `api` and `worker` Lambda binaries, black-box, through `cargo lambda watch` (the Lambda
//! Runtime API emulator) against moto (DynamoDB, SQS, Secrets Manager wire APIs) and, for the
//! `openai` provider, the scripted OpenAI-compatible server. Every test has its own emulator,
//! table, secret and queue; the sample events come from `events/`.
//!
//! Needs `scripts/setup-test-tools.sh` (moto_server and cargo-lambda in `.local/venv`).

use crate::support;

use crate::support::happy_path::QUESTION;
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{json, Value};
use support::lambda_watch::{processes_for, HttpResponse, LambdaWatch, Launch};
use support::llm_server::{Script, ScriptedLlm};
use support::moto::{moto, Moto};

const RUN: &str = include_str!("../events/apigw-run.json");
const RUN_BAD: &str = include_str!("../events/apigw-run-bad.json");
const RUNS_GET: &str = include_str!("../events/apigw-runs-get.json");
const SQS_NEW_RUN: &str = include_str!("../events/sqs-new-run.json");

/// The run id in `events/apigw-runs-get.json`; no test creates it.
const UNKNOWN_RUN_ID: &str = "00000000-0000-4000-8000-000000000001";

fn event(text: &str) -> Value {
    serde_json::from_str(text).expect("event JSON")
}

/// Environment of the functions: moto for every AWS service, the given table, offline model.
fn base_env(moto: &Moto, table: &str) -> Vec<(&'static str, String)> {
    let mut env = moto.function_env();
    env.extend([
        ("CHECKPOINT_TABLE", table.to_owned()),
        ("LLM_PROVIDER", "offline".to_owned()),
        ("RUST_LOG", "bounded_rag=debug,warn".to_owned()),
    ]);
    env
}

/// An API Gateway v2 proxy answer (`statusCode`, `headers`, `body`) with its body parsed.
fn proxy_answer(answer: &Value) -> (u16, Value) {
    let status = answer["statusCode"]
        .as_u64()
        .unwrap_or_else(|| panic!("no statusCode in {answer}")) as u16;
    let body = answer["body"]
        .as_str()
        .unwrap_or_else(|| panic!("no text body in {answer}"));
    assert!(
        !answer["isBase64Encoded"].as_bool().unwrap_or(false),
        "{answer}"
    );
    let body = serde_json::from_str(body).unwrap_or_else(|e| panic!("body not JSON ({e}): {body}"));
    (status, body)
}

/// Every item of `table` whose partition key mentions `run_id`.
async fn items_of_run(moto: &Moto, table: &str, run_id: &str) -> Vec<String> {
    let scan = moto
        .dynamodb()
        .await
        .scan()
        .table_name(table)
        .send()
        .await
        .expect("Scan on moto");
    scan.items()
        .iter()
        .filter_map(|item| match item.get("pk") {
            Some(AttributeValue::S(pk)) if pk.contains(run_id) => Some(pk.clone()),
            _ => None,
        })
        .collect()
}

/// Asserts a finished synchronous run about the sample question, answered offline.
fn assert_completed_offline(body: &Value) {
    assert_eq!(body["success"], true, "{body:#}");
    assert_eq!(body["status"], "completed", "{body:#}");
    assert_eq!(body["question"], QUESTION, "{body:#}");
    let answer = body["answer"].as_str().expect("answer text");
    assert!(answer.contains("Phytophthora"), "answer: {answer}");
    let citations = body["citations"].as_array().expect("citations");
    assert!(!citations.is_empty(), "no citations: {body:#}");
    for citation in citations {
        assert!(
            citation["title"].as_str().is_some_and(|t| !t.is_empty()),
            "{citation}"
        );
        assert!(citation.get("url").is_some(), "{citation}");
    }
}

#[tokio::test]
async fn apigw_run_event_completes_offline_and_checkpoints_to_dynamodb() {
    let moto = moto().await;
    let table = moto.create_table().await;
    let watch = LambdaWatch::start(&base_env(moto, &table)).await;

    let answer = watch.invoke("api", &event(RUN)).await;
    let (status, body) = proxy_answer(&answer);

    assert_eq!(status, 200, "{body:#}");
    assert_eq!(
        answer["headers"]["content-type"], "application/json",
        "{answer:#}"
    );
    assert_completed_offline(&body);
    let run_id = body["run_id"].as_str().expect("run_id");
    assert!(
        !items_of_run(moto, &table, run_id).await.is_empty(),
        "no checkpoint item for run {run_id} in table {table}"
    );
}

#[tokio::test]
async fn apigw_run_bad_event_is_400_naming_question() {
    let moto = moto().await;
    let table = moto.create_table().await;
    let watch = LambdaWatch::start(&base_env(moto, &table)).await;

    let (status, body) = proxy_answer(&watch.invoke("api", &event(RUN_BAD)).await);

    assert_eq!(status, 400, "{body:#}");
    assert_eq!(body["field"], "question", "{body:#}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body:#}"
    );
}

#[tokio::test]
async fn unknown_run_is_404_by_event_and_by_function_url() {
    let moto = moto().await;
    let table = moto.create_table().await;
    let watch = LambdaWatch::start(&base_env(moto, &table)).await;

    let (status, body) = proxy_answer(&watch.invoke("api", &event(RUNS_GET)).await);
    assert_eq!(status, 404, "{body:#}");
    assert_eq!(body["error"], "not_found", "{body:#}");

    let path = format!("/workflow/runs/{UNKNOWN_RUN_ID}");
    let response = watch.url_request("api", "GET", &path, None, &[]).await;
    assert_eq!(response.status, 404, "{response:?}");
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.json()["error"], "not_found", "{response:?}");
}

#[tokio::test]
async fn llm_key_comes_from_secrets_manager_and_is_never_logged() {
    let moto = moto().await;
    let table = moto.create_table().await;
    let key = format!("sk-local-{}", uuid::Uuid::new_v4().simple());
    let secret = json!({"LLM_API_KEY": key, "WEB_SEARCH_API_KEY": ""}).to_string();
    let secret_id = moto.create_secret(&secret).await;
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let mut env = base_env(moto, &table);
    env.retain(|(k, _)| *k != "LLM_PROVIDER" && *k != "RUST_LOG");
    env.extend([
        ("LLM_PROVIDER", "openai".to_owned()),
        ("LLM_BASE_URL", llm.base_url()),
        ("LLM_MODEL", "scripted-model".to_owned()),
        ("SECRETS_ID", secret_id),
        // As much of our own logging as there is, so a leak would show.
        ("RUST_LOG", "bounded_rag=trace,info".to_owned()),
    ]);
    let watch = LambdaWatch::start(&env).await;

    let answer = watch.invoke("api", &event(RUN)).await;
    let (status, body) = proxy_answer(&answer);

    assert_eq!(status, 200, "{body:#}");
    assert_eq!(body["status"], "completed", "{body:#}");
    let recorded = llm.recorded();
    assert!(!recorded.is_empty(), "the model was never called");
    let expected = format!("Bearer {key}");
    for call in &recorded {
        assert_eq!(
            call.authorization.as_deref(),
            Some(expected.as_str()),
            "call {:?} did not carry the key from the secret",
            call.name()
        );
    }
    assert!(
        !answer.to_string().contains(&key),
        "the key is in the answer"
    );
    let logs = watch.logs();
    let run_id = body["run_id"].as_str().expect("run_id");
    assert!(
        logs.contains(run_id),
        "the function's own log lines were not captured:\n{logs}"
    );
    let leaks: Vec<&str> = logs.lines().filter(|l| l.contains(&key)).collect();
    assert!(
        leaks.is_empty(),
        "the key was logged:\n{}",
        leaks.join("\n")
    );
}

#[tokio::test]
async fn async_run_goes_through_sqs_and_the_worker() {
    let moto = moto().await;
    let table = moto.create_table().await;
    let sqs = moto.sqs().await;
    let queue_url = moto.create_queue().await;
    let mut env = base_env(moto, &table);
    env.push(("WORK_QUEUE_URL", queue_url.clone()));
    let watch = LambdaWatch::start(&env).await;

    let body = json!({ "question": QUESTION }).to_string();
    let started = watch
        .url_request(
            "api",
            "POST",
            "/workflow/runs",
            Some(&body),
            &[("content-type", "application/json")],
        )
        .await;
    assert_eq!(started.status, 202, "{started:?}");
    let run_id = started.json()["run_id"]
        .as_str()
        .expect("run_id")
        .to_owned();

    let received = sqs
        .receive_message()
        .queue_url(&queue_url)
        .max_number_of_messages(10)
        .wait_time_seconds(5)
        .send()
        .await
        .expect("ReceiveMessage on moto");
    let messages = received.messages();
    assert_eq!(messages.len(), 1, "{messages:?}");
    let message = &messages[0];
    let message_body: Value = serde_json::from_str(message.body().expect("body")).unwrap();
    assert_eq!(message_body["run_id"], run_id.as_str(), "{message_body}");

    let mut batch = event(SQS_NEW_RUN);
    let record = &mut batch["Records"][0];
    record["messageId"] = json!(message.message_id().expect("message id"));
    record["receiptHandle"] = json!(message.receipt_handle().expect("receipt handle"));
    record["body"] = json!(message.body().expect("body"));
    record["md5OfBody"] = json!(message.md5_of_body().expect("md5"));
    let outcome = watch.invoke("worker", &batch).await;
    assert_eq!(outcome, json!({"batchItemFailures": []}), "{outcome:#}");

    let path = format!("/workflow/runs/{run_id}");
    let finished: HttpResponse = watch.url_request("api", "GET", &path, None, &[]).await;
    assert_eq!(finished.status, 200, "{finished:?}");
    assert_completed_offline(&finished.json());
}

#[tokio::test]
async fn function_url_callers_are_anonymous_and_cannot_read_an_iam_callers_run() {
    let moto = moto().await;
    let table = moto.create_table().await;
    let watch = LambdaWatch::start(&base_env(moto, &table)).await;

    // The IAM principal of events/apigw-run.json starts a run through API Gateway.
    let (status, body) = proxy_answer(&watch.invoke("api", &event(RUN)).await);
    assert_eq!(status, 200, "{body:#}");
    let iam_run = body["run_id"].as_str().expect("run_id").to_owned();
    let path = format!("/workflow/runs/{iam_run}");
    let by_url = watch.url_request("api", "GET", &path, None, &[]).await;
    assert_eq!(by_url.status, 404, "{by_url:?}");
    assert_eq!(by_url.json()["error"], "not_found");

    // The function URL without auth is the anonymous caller: its run is its own.
    let question = json!({ "question": QUESTION }).to_string();
    let started = watch
        .url_request(
            "api",
            "POST",
            "/workflow/run",
            Some(&question),
            &[("content-type", "application/json")],
        )
        .await;
    assert_eq!(started.status, 200, "{started:?}");
    let anonymous_run = started.json()["run_id"].as_str().unwrap().to_owned();
    let path = format!("/workflow/runs/{anonymous_run}");
    let again = watch.url_request("api", "GET", &path, None, &[]).await;
    assert_eq!(again.status, 200, "{again:?}");
    let mut get = event(RUNS_GET);
    let iam_path = format!("/workflow/runs/{anonymous_run}");
    get["rawPath"] = json!(iam_path);
    get["requestContext"]["http"]["path"] = json!(iam_path);
    get["pathParameters"]["run_id"] = json!(anonymous_run);
    let (status, body) = proxy_answer(&watch.invoke("api", &get).await);
    assert_eq!(status, 404, "{body:#}");
}

#[tokio::test]
async fn cargo_run_mode_passes_the_env_file_and_stops_cleanly() {
    let moto = moto().await;
    let table = moto.create_table().await;
    let watch = LambdaWatch::start_with(Launch::CargoRun, &base_env(moto, &table)).await;

    let body = json!({ "question": QUESTION }).to_string();
    let response = watch
        .url_request(
            "api",
            "POST",
            "/workflow/run",
            Some(&body),
            &[("content-type", "application/json")],
        )
        .await;
    assert_eq!(response.status, 200, "{response:?}");
    let body = response.json();
    assert_completed_offline(&body);
    let run_id = body["run_id"].as_str().expect("run_id");
    // The table name reached the function only through --env-file.
    assert!(
        !items_of_run(moto, &table, run_id).await.is_empty(),
        "no checkpoint item for run {run_id} in table {table}"
    );
    let logs = watch.logs();
    assert!(
        logs.contains("--bin") && logs.contains("api"),
        "the emulator did not start the api with cargo run:\n{logs}"
    );

    let addr = watch.addr();
    assert!(
        cfg!(not(target_os = "linux")) || !watch.function_pids().is_empty(),
        "no function process found for {addr}"
    );
    drop(watch);
    assert_eq!(processes_for(addr), Vec::<u32>::new(), "left running");
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "{addr} still listens"
    );
}

#[tokio::test]
async fn dropping_the_emulator_leaves_nothing_running() {
    let moto = moto().await;
    let table = moto.create_table().await;
    let watch = LambdaWatch::start(&base_env(moto, &table)).await;
    let (status, _) = proxy_answer(&watch.invoke("api", &event(RUNS_GET)).await);
    assert_eq!(status, 404);

    let addr = watch.addr();
    if cfg!(target_os = "linux") {
        assert_eq!(
            watch.function_pids().len(),
            4,
            "api, worker, stream and sweeper should be running"
        );
    }
    drop(watch);
    assert_eq!(processes_for(addr), Vec::<u32>::new(), "left running");
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "{addr} still listens"
    );
}
