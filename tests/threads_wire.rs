//! Threads over real wire protocols on loopback: the scripted OpenAI-compatible server (the
//! `contextualize_question` structured call, its inputs and exact call counts) and DynamoDB
//! on moto (a two-turn conversation, listing through the `by_owner` index with `limit` and
//! `cursor`, caller isolation, a busy thread, and deletion leaving no item behind).

use crate::support;

use aws_sdk_dynamodb::types::AttributeValue;
use bounded_rag::clock::SystemClock;
use bounded_rag::config::Settings;
use bounded_rag::entry::{api, App};
use bounded_rag::llm::OfflineModel;
use bounded_rag::rag::{Caller, RagGraph, RagLimits};
use bounded_rag::store::{DynamoStore, MemoryStore};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use support::app::app;
use support::llm_server::{Reply, Script, ScriptedLlm};
use support::moto::moto;

const RUN: &str = include_str!("../events/apigw-run.json");
const RUN_JWT: &str = include_str!("../events/apigw-run-jwt.json");
const RUNS_GET: &str = include_str!("../events/apigw-runs-get.json");
const RUNS_GET_JWT: &str = include_str!("../events/apigw-runs-get-jwt.json");

fn event(
    base: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
    query: &[(&str, &str)],
) -> String {
    let mut v: Value = serde_json::from_str(base).unwrap();
    v["rawPath"] = json!(path);
    v["requestContext"]["http"]["method"] = json!(method);
    v["requestContext"]["http"]["path"] = json!(path);
    v["routeKey"] = json!(format!("{method} {path}"));
    match body {
        Some(b) => {
            v["body"] = json!(b);
            v["headers"]["content-length"] = json!(b.len().to_string());
        }
        None => {
            v.as_object_mut().unwrap().remove("body");
        }
    }
    if !query.is_empty() {
        let map: serde_json::Map<String, Value> = query
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        v["queryStringParameters"] = Value::Object(map);
        let raw: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        v["rawQueryString"] = json!(raw.join("&"));
    }
    v.to_string()
}

async fn call(app: &App, event: &str) -> (u16, Value) {
    let request = lambda_http::request::from_str(event).expect("event parses");
    let response = api::handle(app, None, request).await;
    (response.status().as_u16(), api::body_json(&response))
}

async fn ask(app: &App, base: &str, thread: &str, question: &str) -> (u16, Value) {
    let body = json!({ "question": question, "thread_id": thread }).to_string();
    call(app, &event(base, "POST", "/workflow/run", Some(&body), &[])).await
}

/// The user message of a recorded chat request.
fn user_message(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .unwrap()
}

#[tokio::test]
async fn the_scripted_model_is_asked_to_contextualize_once_and_routing_uses_its_answer() {
    let standalone = "How is patch canker in durian treated?";
    let llm = ScriptedLlm::start(Script::defaults().on(
        "contextualize_question",
        [Reply::json(json!({ "standalone_question": standalone }))],
    ))
    .await;
    let app = app(&llm, Arc::new(MemoryStore::new()), false);
    let (s, first) = ask(&app, RUN, "chat", "What causes patch canker in durian?").await;
    assert_eq!(s, 200, "{first}");
    assert_eq!(llm.calls("contextualize_question"), 0);
    let turn_one = llm.total_calls();
    llm.clear();

    let (s, second) = ask(&app, RUN, "chat", "How is it treated?").await;
    assert_eq!(s, 200, "{second}");
    assert_eq!(second["metadata"]["turn"], 2);
    assert_eq!(second["metadata"]["standalone_question"], standalone);
    assert_eq!(second["question"], "How is it treated?");
    // Exactly one call more than the first turn, and it came first.
    let sequence = llm.sequence();
    assert_eq!(sequence[0], "contextualize_question");
    assert_eq!(llm.calls("contextualize_question"), 1);
    assert_eq!(llm.total_calls(), turn_one + 1);
    assert_eq!(second["metadata"]["model_calls"], json!(turn_one + 1));
    let requests = llm.recorded();
    let contextualize = user_message(&requests[0].body);
    assert!(
        contextualize.contains("Question: How is it treated?"),
        "{contextualize}"
    );
    assert!(
        contextualize.contains("User: What causes patch canker in durian?"),
        "{contextualize}"
    );
    // Routing, grading and the answer are about the standalone question; the answer prompt
    // also sees the earlier turn.
    for r in &requests[1..] {
        assert!(user_message(&r.body).contains(standalone), "{}", r.name());
    }
    let answer = requests
        .iter()
        .find(|r| r.name() == "generate_answer")
        .unwrap();
    let prompt = user_message(&answer.body);
    assert!(
        prompt.starts_with("Conversation so far:\nUser: What causes patch canker in durian?"),
        "{prompt}"
    );
    let cited: Vec<&str> = second["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["url"].as_str().unwrap())
        .collect();
    assert!(
        cited.iter().any(|u| u.starts_with("kb://patch-canker.md")),
        "{cited:?}"
    );
}

/// An app on the offline model and a fresh moto table; the table's client for raw reads.
async fn dynamo_app() -> (App, aws_sdk_dynamodb::Client, String) {
    let moto = moto().await;
    let table = moto.create_table().await;
    let config = DynamoStore::client_config(&moto.sdk_config().await, Duration::from_secs(20));
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    let store = DynamoStore::new(client.clone(), table.clone(), Duration::from_secs(3600));
    let kb = Arc::new(bounded_rag::ingest::sample_kb().unwrap());
    let graph = RagGraph::new(Arc::new(OfflineModel), kb, None, RagLimits::default());
    let app = App::from_parts(
        Settings::default(),
        graph,
        Arc::new(store),
        Arc::new(SystemClock),
    );
    (app, client, table)
}

/// Every item of partition `pk`, as DynamoDB holds them.
async fn partition(client: &aws_sdk_dynamodb::Client, table: &str, pk: &str) -> usize {
    client
        .query()
        .table_name(table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", AttributeValue::S(pk.to_owned()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .count as usize
}

#[tokio::test]
async fn on_dynamodb_a_conversation_is_listed_isolated_busy_and_deleted_without_a_trace() {
    let (app, client, table) = dynamo_app().await;
    let (s, first) = ask(&app, RUN, "chat", "What causes patch canker in durian?").await;
    assert_eq!(s, 200, "{first}");
    let (s, second) = ask(&app, RUN, "chat", "How is it treated?").await;
    assert_eq!(s, 200, "{second}");
    assert_eq!(second["metadata"]["turn"], 2);
    let standalone = second["metadata"]["standalone_question"].as_str().unwrap();
    assert!(
        standalone.contains("patch canker in durian"),
        "{standalone}"
    );
    // The follow-up's search finds the Management section first.
    assert_eq!(
        support::happy_path::first_retrieved(&second),
        "kb://patch-canker.md#4"
    );
    assert!(!second["citations"].as_array().unwrap().is_empty());

    // Two more threads, so the listing has pages: newest first, one per page.
    for id in ["older", "newest"] {
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(ask(&app, RUN, id, "What causes pink disease?").await.0, 200);
    }
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut query = vec![("limit", "1")];
        if let Some(c) = &cursor {
            query.push(("cursor", c.as_str()));
        }
        let (s, page) = call(&app, &event(RUNS_GET, "GET", "/threads", None, &query)).await;
        assert_eq!(s, 200, "{page}");
        for t in page["threads"].as_array().unwrap() {
            listed.push(t["thread_id"].as_str().unwrap().to_owned());
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(listed, ["newest", "older", "chat"]);

    // Another caller: nothing to see, nothing to delete.
    let (s, theirs) = call(&app, &event(RUNS_GET_JWT, "GET", "/threads", None, &[])).await;
    assert_eq!((s, theirs["threads"].as_array().unwrap().len()), (200, 0));
    let (s, _) = call(
        &app,
        &event(RUNS_GET_JWT, "GET", "/threads/chat", None, &[]),
    )
    .await;
    assert_eq!(s, 404);
    let (s, _) = call(
        &app,
        &event(RUNS_GET_JWT, "DELETE", "/threads/chat", None, &[]),
    )
    .await;
    assert_eq!(s, 404);
    let (s, own) = ask(&app, RUN_JWT, "chat", "How is it treated?").await;
    assert_eq!((s, own["metadata"]["turn"].as_u64()), (200, Some(1)));

    // A turn in progress (started, its run not stored yet): the next one is 409, and so is
    // deleting the thread.
    let caller =
        Caller::Iam("arn:aws:sts::123456789012:assumed-role/bounded-rag-caller/alice".into());
    let threads = app.runs().threads();
    threads
        .begin(&caller, "busy", "held-run", "q")
        .await
        .unwrap();
    let (s, body) = ask(&app, RUN, "busy", "How is it treated?").await;
    assert_eq!(
        (s, body["error"].as_str()),
        (409, Some("thread_busy")),
        "{body}"
    );
    assert_eq!(body["run_id"], "held-run");
    let (s, body) = call(&app, &event(RUNS_GET, "DELETE", "/threads/busy", None, &[])).await;
    assert_eq!(
        (s, body["error"].as_str()),
        (409, Some("thread_busy")),
        "{body}"
    );

    // Delete: 204, then nothing of it can be read, and no item of it is left.
    let (_, shown) = call(&app, &event(RUNS_GET, "GET", "/threads/chat", None, &[])).await;
    assert_eq!(shown["turns"].as_array().unwrap().len(), 2);
    let (s, _) = call(&app, &event(RUNS_GET, "DELETE", "/threads/chat", None, &[])).await;
    assert_eq!(s, 204);
    assert_eq!(
        call(&app, &event(RUNS_GET, "GET", "/threads/chat", None, &[]))
            .await
            .0,
        404
    );
    for run in [&first, &second] {
        let id = run["run_id"].as_str().unwrap();
        let get = event(RUNS_GET, "GET", &format!("/workflow/runs/{id}"), None, &[]);
        assert_eq!(call(&app, &get).await.0, 404);
        assert_eq!(partition(&client, &table, &format!("run#{id}")).await, 0);
    }
    let (_, page) = call(&app, &event(RUNS_GET, "GET", "/threads", None, &[])).await;
    let ids: Vec<&str> = page["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["thread_id"].as_str().unwrap())
        .collect();
    assert!(!ids.contains(&"chat"), "{ids:?}");
    // Scan the whole table (this test's own): no item of the deleted thread is left.
    let items = client
        .scan()
        .table_name(&table)
        .send()
        .await
        .unwrap()
        .items
        .unwrap_or_default();
    let leftovers: Vec<String> = items
        .iter()
        .filter_map(|i| i.get("pk")?.as_s().ok().cloned())
        .filter(|pk| pk.ends_with("#chat") && !pk.contains(&jwt_digest()))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// The digest of the JWT caller of `events/apigw-run-jwt.json`, whose own `chat` survives.
fn jwt_digest() -> String {
    use sha2::Digest;
    let v: Value = serde_json::from_str(RUN_JWT).unwrap();
    let sub = v["requestContext"]["authorizer"]["jwt"]["claims"]["sub"]
        .as_str()
        .unwrap();
    sha2::Sha256::digest(format!("jwt:{sub}").as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
