//! The OpenAI-compatible client against a scripted chat-completions server on loopback:
//! wire format, error classification, the bounded re-ask, timeouts. Reported usage and streamed
//! replies are `llm_openai_stream.rs`.

use crate::support;

use bounded_rag::error::{Classify, ErrorClass};
use bounded_rag::llm::{
    ask, BinaryScore, ChatModel, DataSource, LlmError, OpenAiConfig, OpenAiModel, RouteDecision,
    Task,
};
use bounded_rag::secrets::Secret;
use serde_json::json;
use std::time::{Duration, Instant};
use support::chat_request::{grade, request};
use support::llm_server::{Reply, Script, ScriptedLlm};

pub(crate) const KEY: &str = "sk-test-0123456789abcdef";

pub(crate) fn model(server: &ScriptedLlm, key: Option<&str>) -> OpenAiModel {
    let mut config = OpenAiConfig::new(server.base_url(), "test-model");
    config.api_key = key.map(Secret::new);
    OpenAiModel::new(config).expect("valid config")
}

#[tokio::test]
async fn sends_the_chat_completions_wire_format_without_auth_when_keyless() {
    let server = ScriptedLlm::start(Script::defaults()).await;
    let score: BinaryScore = ask(&model(&server, None), &grade()).await.unwrap();
    assert!(score.yes());

    let recorded = server.recorded();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].name(), "grade_documents");
    assert_eq!(recorded[0].authorization, None);
    let body = &recorded[0].body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["temperature"].as_f64(), Some(0.0));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You grade documents."},
            {"role": "user", "content": "Question: What causes patch canker?"}
        ])
    );
    assert_eq!(
        body["response_format"],
        json!({
            "type": "json_schema",
            "json_schema": {
                "name": "grade_documents",
                "schema": Task::GradeDocuments.schema(),
                "strict": true
            }
        })
    );
}

#[tokio::test]
async fn sends_a_bearer_key_only_when_configured() {
    let server = ScriptedLlm::start(Script::defaults()).await;
    let route: RouteDecision = ask(
        &model(&server, Some(KEY)),
        &request(Task::RouteQuery, Duration::from_secs(5)),
    )
    .await
    .unwrap();
    assert_eq!(route.data_source, DataSource::KgRetrieval);
    let recorded = server.recorded();
    assert_eq!(recorded[0].name(), "route_query");
    assert_eq!(
        recorded[0].authorization.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(!format!("{:?}", model(&server, Some(KEY))).contains(KEY));
}

#[tokio::test]
async fn server_error_is_transient_with_its_status() {
    let server =
        ScriptedLlm::start(Script::new().on("grade_documents", [Reply::status(500)])).await;
    let error = model(&server, None).complete(&grade()).await.unwrap_err();
    assert_eq!(error.class(), ErrorClass::Transient);
    assert_eq!(error.status(), Some(500));
    assert_eq!(error.retry_after(), None);
    assert!(error.to_string().contains("scripted HTTP 500"), "{error}");
    assert_eq!(server.total_calls(), 1);
}

#[tokio::test]
async fn bad_request_is_permanent_and_not_retried_by_ask() {
    let server =
        ScriptedLlm::start(Script::new().on("grade_documents", [Reply::status(400)])).await;
    let error = ask::<BinaryScore>(&model(&server, None), &grade())
        .await
        .unwrap_err();
    assert_eq!(error.class(), ErrorClass::Permanent);
    assert_eq!(error.status(), Some(400));
    assert_eq!(server.total_calls(), 1);
}

#[tokio::test]
async fn rate_limit_is_transient_with_retry_after() {
    let server = ScriptedLlm::start(
        Script::new().on("grade_documents", [Reply::status(429).retry_after("2")]),
    )
    .await;
    let error = model(&server, None).complete(&grade()).await.unwrap_err();
    assert!(error.is_transient());
    assert_eq!(error.status(), Some(429));
    assert_eq!(error.retry_after(), Some(Duration::from_secs(2)));
}

#[tokio::test]
async fn unavailable_with_an_http_date_retry_after_is_transient() {
    let later = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(30));
    let server = ScriptedLlm::start(
        Script::new().on("grade_documents", [Reply::status(503).retry_after(later)]),
    )
    .await;
    let error = model(&server, None).complete(&grade()).await.unwrap_err();
    assert!(error.is_transient());
    let wait = error.retry_after().expect("retry_after");
    assert!(
        wait > Duration::from_secs(25) && wait <= Duration::from_secs(30),
        "{wait:?}"
    );
}

#[tokio::test]
async fn auth_failure_is_permanent_and_never_shows_the_key() {
    let echo = format!(r#"{{"error":{{"message":"Incorrect API key provided: {KEY}"}}}}"#);
    let server =
        ScriptedLlm::start(Script::new().on("grade_documents", [Reply::status(401).body(echo)]))
            .await;
    let error = model(&server, Some(KEY))
        .complete(&grade())
        .await
        .unwrap_err();
    assert_eq!(error.class(), ErrorClass::Permanent);
    assert!(error.is_auth());
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(KEY), "{shown}");
    assert!(shown.contains("[redacted]"), "{shown}");
}

#[tokio::test]
async fn malformed_then_valid_succeeds_after_exactly_two_calls() {
    let server = ScriptedLlm::start(Script::new().on(
        "grade_documents",
        [Reply::raw("yes, relevant"), Reply::no()],
    ))
    .await;
    let score: BinaryScore = ask(&model(&server, None), &grade()).await.unwrap();
    assert!(!score.yes());
    assert_eq!(server.calls("grade_documents"), 2);

    let reask = &server.requests()[1]["messages"];
    assert_eq!(reask.as_array().unwrap().len(), 4);
    assert_eq!(
        reask[2],
        json!({"role": "assistant", "content": "yes, relevant"})
    );
    assert_eq!(reask[3]["role"], "user");
    let text = reask[3]["content"].as_str().unwrap();
    assert!(
        text.contains("not valid JSON for schema grade_documents"),
        "{text}"
    );
}

#[tokio::test]
async fn malformed_twice_is_permanent_after_exactly_two_calls() {
    let server = ScriptedLlm::start(
        Script::new().on("grade_documents", [Reply::raw("{\"binary_score\": ")]),
    )
    .await;
    let error = ask::<BinaryScore>(&model(&server, None), &grade())
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        LlmError::Malformed {
            schema: "grade_documents",
            attempts: 2,
            ..
        }
    ));
    assert_eq!(error.class(), ErrorClass::Permanent);
    assert_eq!(server.calls("grade_documents"), 2);
}

#[tokio::test]
async fn fenced_reply_is_accepted_in_one_call() {
    let server = ScriptedLlm::start(Script::new().on(
        "route_query",
        [Reply::raw(
            "```json\n{\"data_source\": \"web_search\"}\n```",
        )],
    ))
    .await;
    let route: RouteDecision = ask(
        &model(&server, None),
        &request(Task::RouteQuery, Duration::from_secs(5)),
    )
    .await
    .unwrap();
    assert_eq!(route.data_source, DataSource::WebSearch);
    assert_eq!(server.total_calls(), 1);
}

#[tokio::test]
async fn a_reply_that_is_not_chat_completions_is_permanent() {
    let server = ScriptedLlm::start(
        Script::new().on("grade_documents", [Reply::Body(json!({"choices": []}))]),
    )
    .await;
    let error = model(&server, None).complete(&grade()).await.unwrap_err();
    assert!(matches!(error, LlmError::InvalidResponse(_)), "{error:?}");
    assert_eq!(error.class(), ErrorClass::Permanent);
}

#[tokio::test]
async fn connection_refused_is_transient() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let config = OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "test-model");
    let error = OpenAiModel::new(config)
        .unwrap()
        .complete(&grade())
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::Connect(_)), "{error:?}");
    assert!(error.is_transient());
}

#[tokio::test]
async fn a_slow_server_times_out_as_transient_within_the_request_timeout() {
    let server = ScriptedLlm::start(Script::new().on(
        "grade_documents",
        [Reply::yes().delayed(Duration::from_secs(5))],
    ))
    .await;
    let started = Instant::now();
    let error = model(&server, None)
        .complete(&request(Task::GradeDocuments, Duration::from_millis(200)))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        LlmError::Timeout {
            after: Duration::from_millis(200)
        }
    );
    assert!(error.is_transient());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn the_configured_request_timeout_caps_a_longer_request_timeout() {
    let server = ScriptedLlm::start(Script::new().on(
        "grade_documents",
        [Reply::yes().delayed(Duration::from_secs(5))],
    ))
    .await;
    let mut config = OpenAiConfig::new(server.base_url(), "test-model");
    config.request_timeout = Duration::from_millis(150);
    let error = OpenAiModel::new(config)
        .unwrap()
        .complete(&request(Task::GradeDocuments, Duration::from_secs(30)))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        LlmError::Timeout {
            after: Duration::from_millis(150)
        }
    );
}

#[tokio::test]
async fn invalid_configuration_is_rejected_up_front() {
    for config in [
        OpenAiConfig::new("not a url", "m"),
        OpenAiConfig::new("ftp://example.com/v1", "m"),
        OpenAiConfig::new("http://127.0.0.1:1/v1", " "),
        OpenAiConfig::new("http://127.0.0.1:1/v1", "m").with_api_key(Secret::new("bad\nkey")),
    ] {
        let error = OpenAiModel::new(config).unwrap_err();
        assert!(matches!(error, LlmError::Config(_)), "{error:?}");
        assert_eq!(error.class(), ErrorClass::Permanent);
        assert!(!error.to_string().contains("bad\nkey"));
    }
}

#[tokio::test]
async fn one_client_reuses_its_connection_across_calls() {
    let server = ScriptedLlm::start(Script::defaults()).await;
    let model = model(&server, None);
    for _ in 0..5 {
        let _: BinaryScore = ask(&model, &grade()).await.unwrap();
    }
    assert_eq!(server.calls("grade_documents"), 5);
    let peers: std::collections::HashSet<_> = server.recorded().iter().map(|r| r.peer).collect();
    assert_eq!(peers.len(), 1, "one pooled connection, got {peers:?}");
    assert_eq!(
        model.endpoint(),
        format!("{}/chat/completions", server.base_url())
    );
}
