//! The OpenAI-compatible client against a scripted chat-completions server on loopback:
//! wire format, error classification, the bounded re-ask, timeouts, reported usage and
//! streamed replies.

use crate::support;

use bounded_rag::engine::{Meter, Usage};
use bounded_rag::error::{Classify, ErrorClass};
use bounded_rag::llm::{
    ask, write_answer, BinaryScore, ChatModel, ChatRequest, Completion, DataSource, LlmError,
    Message, OpenAiConfig, OpenAiModel, Role, RouteDecision, Task, TaskInputs, TokenCount,
};
use bounded_rag::secrets::Secret;
use serde_json::json;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::llm_server::{Reply, Script, ScriptedLlm};

const KEY: &str = "sk-test-0123456789abcdef";

fn model(server: &ScriptedLlm, key: Option<&str>) -> OpenAiModel {
    let mut config = OpenAiConfig::new(server.base_url(), "test-model");
    config.api_key = key.map(Secret::new);
    OpenAiModel::new(config).expect("valid config")
}

fn request(task: Task, timeout: Duration) -> ChatRequest<'static> {
    ChatRequest {
        task,
        messages: vec![
            Message::new(Role::System, "You grade documents."),
            Message::new(Role::User, "Question: What causes patch canker?"),
        ],
        inputs: TaskInputs {
            question: "What causes patch canker?",
            documents: &[],
            answer: None,
        },
        timeout,
        max_tokens: if task == Task::GenerateAnswer {
            1024
        } else {
            32
        },
        stop: &[],
    }
}

fn grade() -> ChatRequest<'static> {
    request(Task::GradeDocuments, Duration::from_secs(5))
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

#[tokio::test]
async fn an_unstreamed_reply_reports_the_scripted_usage() {
    let server = ScriptedLlm::start(Script::defaults()).await;
    let completion = model(&server, None).complete(&grade()).await.unwrap();
    assert_eq!(completion.content, r#"{"binary_score":"yes"}"#);
    assert_eq!(completion.tokens, Some(tokens(100, 10)));
    assert!(!server.recorded()[0].streamed());

    let server = ScriptedLlm::start(Script::defaults().without_usage()).await;
    let completion = model(&server, None).complete(&grade()).await.unwrap();
    assert_eq!(completion.tokens, None);
}

fn tokens(prompt: u64, completion: u64) -> TokenCount {
    TokenCount {
        prompt,
        completion,
        reasoning: 0,
    }
}

fn answer() -> ChatRequest<'static> {
    request(Task::GenerateAnswer, Duration::from_secs(5))
}

/// Streams `request` and returns the result with every delta the sink received, in order.
async fn stream(
    model: &OpenAiModel,
    request: &ChatRequest<'_>,
) -> (Result<Completion, LlmError>, Vec<String>) {
    let deltas = Mutex::new(Vec::new());
    let sink = |delta: &str| deltas.lock().unwrap().push(delta.to_owned());
    let result = model.complete_streaming(request, &sink).await;
    (result, deltas.into_inner().unwrap())
}

const TEXT: &str = "Patch canker is caused by a fungus.";

#[tokio::test]
async fn a_streamed_reply_arrives_in_order_in_several_deltas() {
    let server =
        ScriptedLlm::start(Script::new().on("generate_answer", [Reply::answer(TEXT).chunked(4)]))
            .await;
    let (result, deltas) = stream(&model(&server, None), &answer()).await;
    let completion = result.unwrap();

    // The answer is plain text, streamed as it is written.
    let content = TEXT;
    assert_eq!(completion.content, content);
    assert_eq!(deltas.concat(), content);
    assert_eq!(deltas.len(), content.chars().count().div_ceil(4));
    assert_eq!(deltas[0], "Patc");
    assert_eq!(completion.tokens, Some(tokens(100, 10)));
    assert!(!completion.cached);

    // The same body as an unstreamed call, plus the two stream fields.
    let recorded = server.recorded();
    assert_eq!(recorded.len(), 1);
    assert!(recorded[0].streamed());
    assert_eq!(recorded[0].name(), "generate_answer");
    let body = &recorded[0].body;
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["messages"].as_array().unwrap().len(), 2);
    assert!(
        body.get("response_format").is_none(),
        "no JSON schema for the answer"
    );
    assert_eq!(body["max_tokens"], 1024);
}

#[tokio::test]
async fn streamed_usage_comes_from_the_last_chunk_or_is_none() {
    let server = ScriptedLlm::start(
        Script::new()
            .on("generate_answer", [Reply::answer(TEXT)])
            .usage(1234, 56),
    )
    .await;
    let (result, deltas) = stream(&model(&server, None), &answer()).await;
    assert_eq!(result.unwrap().tokens, Some(tokens(1234, 56)));
    // The default chunk size is 8 characters.
    let content = TEXT;
    assert_eq!(deltas.len(), content.chars().count().div_ceil(8));

    let server = ScriptedLlm::start(
        Script::new()
            .on("generate_answer", [Reply::answer(TEXT)])
            .without_usage(),
    )
    .await;
    let (result, deltas) = stream(&model(&server, None), &answer()).await;
    let completion = result.unwrap();
    assert_eq!(completion.tokens, None);
    assert_eq!(completion.content, content);
    assert_eq!(deltas.concat(), content);
}

#[tokio::test]
async fn a_server_error_before_the_stream_is_transient_with_its_status() {
    let server = ScriptedLlm::start(
        Script::new().on("generate_answer", [Reply::status(503).retry_after("3")]),
    )
    .await;
    let (result, deltas) = stream(&model(&server, None), &answer()).await;
    let error = result.unwrap_err();
    assert_eq!(error.class(), ErrorClass::Transient);
    assert_eq!(error.status(), Some(503));
    assert_eq!(error.retry_after(), Some(Duration::from_secs(3)));
    assert!(error.to_string().contains("scripted HTTP 503"), "{error}");
    assert!(deltas.is_empty(), "{deltas:?}");
    assert_eq!(server.total_calls(), 1);
    assert!(server.recorded()[0].streamed());
}

#[tokio::test]
async fn a_prompt_over_the_context_window_is_classified_once_and_not_retried() {
    let server = ScriptedLlm::start(Script::new().on("grade_documents", [Reply::overflow()])).await;
    let error = ask::<BinaryScore>(&model(&server, None), &grade())
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::ContextOverflow(_)), "{error:?}");
    assert_eq!(error.class(), ErrorClass::Permanent);
    assert_eq!(server.total_calls(), 1);
}

#[tokio::test]
async fn a_bad_request_before_the_stream_is_permanent() {
    let server =
        ScriptedLlm::start(Script::new().on("generate_answer", [Reply::status(400)])).await;
    let (result, deltas) = stream(&model(&server, None), &answer()).await;
    let error = result.unwrap_err();
    assert_eq!(error.class(), ErrorClass::Permanent);
    assert_eq!(error.status(), Some(400));
    assert_eq!(error.retry_after(), None);
    assert!(deltas.is_empty());
}

#[tokio::test]
async fn a_stream_cut_mid_way_is_transient_after_the_deltas_sent() {
    let server = ScriptedLlm::start(Script::new().on(
        "generate_answer",
        [Reply::answer(TEXT).chunked(4).cut_after(3)],
    ))
    .await;
    let (result, deltas) = stream(&model(&server, Some(KEY)), &answer()).await;
    let error = result.unwrap_err();
    assert!(matches!(error, LlmError::Transport(_)), "{error:?}");
    assert_eq!(error.class(), ErrorClass::Transient);
    assert_eq!(deltas, ["Patc", "h ca", "nker"]);
    assert!(!format!("{error} {error:?}").contains(KEY));
}

#[tokio::test]
async fn the_request_timeout_bounds_the_whole_stream() {
    let server = ScriptedLlm::start(
        Script::new().on(
            "generate_answer",
            [Reply::answer(TEXT)
                .chunked(1)
                .every(Duration::from_millis(100))],
        ),
    )
    .await;
    let (result, deltas) = stream(
        &model(&server, None),
        &request(Task::GenerateAnswer, Duration::from_millis(300)),
    )
    .await;
    assert_eq!(
        result.unwrap_err(),
        LlmError::Timeout {
            after: Duration::from_millis(300)
        }
    );
    let content = json!({ "answer": TEXT }).to_string();
    assert!(deltas.len() < content.len(), "{deltas:?}");
}

#[tokio::test]
async fn a_server_that_ignores_stream_is_read_as_one_reply() {
    let whole = json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"answer\":\"ok\"}"}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
    });
    let server =
        ScriptedLlm::start(Script::new().on("generate_answer", [Reply::Body(whole)])).await;
    let (result, deltas) = stream(&model(&server, None), &answer()).await;
    let completion = result.unwrap();
    assert_eq!(completion.content, r#"{"answer":"ok"}"#);
    assert_eq!(completion.tokens, Some(tokens(9, 2)));
    assert_eq!(deltas, [r#"{"answer":"ok"}"#]);
}

#[tokio::test]
async fn ask_metered_with_a_sink_charges_the_reported_tokens_of_one_streamed_call() {
    let server = ScriptedLlm::start(
        Script::new()
            .on("generate_answer", [Reply::answer(TEXT).chunked(5)])
            .usage(321, 12),
    )
    .await;
    let meter = Meter::default();
    let seen = Mutex::new(Vec::new());
    let sink = |delta: &str| seen.lock().unwrap().push(delta.to_owned());
    let reply = write_answer(&model(&server, None), &answer(), &meter, Some(&sink))
        .await
        .unwrap();
    assert_eq!(reply.text, TEXT);
    assert_eq!(
        meter.usage(),
        Usage {
            prompt_tokens: 321,
            completion_tokens: 12,
            estimated: false,
            model_calls: 1,
            cache_hits: 0,
            reasoning_tokens: 0,
        }
    );
    let seen = seen.into_inner().unwrap();
    assert!(seen.len() > 1, "{seen:?}");
    assert_eq!(seen.concat(), TEXT, "the answer streams as plain text");
    assert_eq!(server.calls("generate_answer"), 1);
    assert!(server.recorded()[0].streamed());
}

#[tokio::test]
async fn a_streamed_auth_failure_never_shows_the_key() {
    let echo = format!(r#"{{"error":{{"message":"Incorrect API key provided: {KEY}"}}}}"#);
    let server =
        ScriptedLlm::start(Script::new().on("generate_answer", [Reply::status(401).body(echo)]))
            .await;
    let (result, deltas) = stream(&model(&server, Some(KEY)), &answer()).await;
    let error = result.unwrap_err();
    assert_eq!(error.class(), ErrorClass::Permanent);
    assert!(error.is_auth());
    let shown = format!("{error} {error:?}");
    assert!(!shown.contains(KEY), "{shown}");
    assert!(shown.contains("[redacted]"), "{shown}");
    assert!(deltas.is_empty());
    assert_eq!(
        server.recorded()[0].authorization.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
}
