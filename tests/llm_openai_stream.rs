//! The OpenAI-compatible client's reported usage and streamed replies, against a scripted
//! chat-completions server on loopback: deltas in order, usage from the last chunk, errors before
//! and during a stream, the request timeout over the whole stream, metering, the key never shown.

use crate::support;

use crate::llm_openai::{model, KEY};
use bounded_rag::error::{Classify, ErrorClass};
use bounded_rag::llm::{ask, BinaryScore, ChatModel, LlmError, Task, TokenCount};
use bounded_rag::usage::Usage;
use serde_json::json;
use std::time::Duration;
use support::chat_request::{answer, grade, request};
use support::chat_stream::{stream, streamed_answer};
use support::llm_server::{Reply, Script, ScriptedLlm};

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
    let (text, seen, meter) = streamed_answer(&model(&server, None), &answer()).await;
    assert_eq!(text.unwrap(), TEXT);
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
