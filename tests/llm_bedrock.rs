//! The Bedrock client against the scripted Bedrock runtime on loopback: the Converse request
//! (forced tool, system, alternating turns), error classification, the bounded re-ask, timeouts,
//! usage, and `ConverseStream` replies read from real event-stream frames.

use crate::support;

use bounded_rag::error::{Classify, ErrorClass};
use bounded_rag::llm::{
    ask, BedrockConfig, BedrockModel, BinaryScore, ChatModel, LlmError, Task, TokenCount,
};
use bounded_rag::usage::Usage;
use serde_json::json;
use std::time::Duration;
use support::bedrock_server::{exception, BedrockScript, ScriptedBedrock};
use support::chat_request::{answer, grade, request};
use support::chat_stream::{stream, streamed_answer};
use support::llm_server::{Reply, Script};

const MODEL: &str = "anthropic.claude-3-5-haiku-20241022-v1:0";
const TEXT: &str = "Patch canker is caused by a fungus.";

async fn start(script: Script) -> ScriptedBedrock {
    ScriptedBedrock::start(BedrockScript::new(script)).await
}

fn model(server: &ScriptedBedrock) -> BedrockModel {
    BedrockModel::new(&server.sdk_config(), BedrockConfig::new(MODEL)).expect("valid config")
}

#[tokio::test]
async fn sends_converse_with_the_schema_as_a_forced_tool_and_reads_tool_input_and_usage() {
    let server = start(
        Script::new()
            .on("grade_documents", [Reply::yes()])
            .usage(42, 3),
    )
    .await;
    let completion = model(&server).complete(&grade()).await.unwrap();
    assert_eq!(completion.content, r#"{"binary_score":"yes"}"#);
    assert_eq!(
        completion.tokens,
        Some(TokenCount {
            prompt: 42,
            completion: 3,
            reasoning: 0
        })
    );

    let calls = server.recorded();
    assert_eq!(calls.len(), 1);
    // The model id is a path segment, percent-encoded as the SDK sends it.
    assert_eq!(
        calls[0].path,
        format!("/model/{}/converse", MODEL.replace(':', "%3A"))
    );
    let body = &calls[0].body;
    assert_eq!(body["system"], json!([{"text": "You grade documents."}]));
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"text": "Question: What causes patch canker?"}]}])
    );
    let spec = &body["toolConfig"]["tools"][0]["toolSpec"];
    assert_eq!(spec["name"], "grade_documents");
    assert_eq!(spec["inputSchema"]["json"], Task::GradeDocuments.schema());
    assert_eq!(
        body["toolConfig"]["toolChoice"],
        json!({"tool": {"name": "grade_documents"}})
    );
    assert_eq!(body["inferenceConfig"]["temperature"], 0.0);
    // Signed with the fake static credentials; no key anywhere.
    let auth = calls[0].authorization.as_deref().unwrap();
    assert!(auth.contains("Credential=testing/"), "{auth}");
}

#[tokio::test]
async fn throttling_unavailable_and_not_ready_are_transient_validation_and_denied_permanent() {
    for (reply, class, status) in [
        (Reply::status(429), ErrorClass::Transient, 429),
        (Reply::status(503), ErrorClass::Transient, 503),
        (Reply::status(500), ErrorClass::Transient, 500),
        (
            exception(429, "ModelNotReadyException", "loading"),
            ErrorClass::Transient,
            429,
        ),
        (Reply::status(400), ErrorClass::Permanent, 400),
        (
            exception(403, "AccessDeniedException", "no access"),
            ErrorClass::Permanent,
            403,
        ),
    ] {
        let server = start(Script::new().on("grade_documents", [reply])).await;
        let error = ask::<BinaryScore>(&model(&server), &grade())
            .await
            .unwrap_err();
        assert_eq!(error.class(), class, "{error}");
        assert_eq!(error.status(), Some(status), "{error}");
        assert_eq!(error.retry_after(), None);
        assert_eq!(
            server.total_calls(),
            1,
            "ask never retries an error: {error}"
        );
    }
    let server = start(Script::new().on("grade_documents", [Reply::status(400)])).await;
    let error = model(&server).complete(&grade()).await.unwrap_err();
    assert!(
        error.to_string().contains("ValidationException")
            && error.to_string().contains("check that LLM_MODEL"),
        "{error}"
    );
}

#[tokio::test]
async fn a_text_reply_instead_of_the_tool_is_re_asked_once() {
    let server = start(Script::new().on(
        "grade_documents",
        [Reply::raw("I think it is relevant."), Reply::no()],
    ))
    .await;
    let score: BinaryScore = ask(&model(&server), &grade()).await.unwrap();
    assert!(!score.yes());
    let calls = server.recorded();
    assert_eq!(calls.len(), 2);
    // The re-ask: the bad reply as an assistant turn, then one user turn (two texts merged).
    let messages = calls[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"][0]["text"], "I think it is relevant.");
    assert_eq!(messages[2]["role"], "user");
}

#[tokio::test]
async fn connection_refused_is_transient_and_a_slow_reply_times_out() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let sdk = aws_config::SdkConfig::builder()
        .http_client(bounded_rag::tls::aws_http_client())
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(
            aws_sdk_bedrockruntime::config::SharedCredentialsProvider::new(
                aws_sdk_bedrockruntime::config::Credentials::new("a", "b", None, None, "test"),
            ),
        )
        .endpoint_url(format!("http://127.0.0.1:{port}"))
        .build();
    let error = BedrockModel::new(&sdk, BedrockConfig::new(MODEL))
        .unwrap()
        .complete(&grade())
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::Connect(_)), "{error:?}");
    assert!(error.is_transient());

    let server = start(Script::new().on(
        "grade_documents",
        [Reply::yes().delayed(Duration::from_secs(5))],
    ))
    .await;
    let error = model(&server)
        .complete(&request(Task::GradeDocuments, Duration::from_millis(200)))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        LlmError::Timeout {
            after: Duration::from_millis(200)
        }
    );
}

/// True when every call of `server` forced no tool and sent `inferenceConfig.maxTokens` 1024.
fn calls_have_no_tool(server: &ScriptedBedrock) -> bool {
    server
        .recorded()
        .iter()
        .all(|call| call.body["toolConfig"].is_null() && call.max_tokens() == Some(1024))
}

#[tokio::test]
async fn a_streamed_reply_arrives_in_order_in_several_deltas_with_its_usage() {
    let server = start(
        Script::new()
            .on("generate_answer", [Reply::answer(TEXT).chunked(4)])
            .usage(1234, 56),
    )
    .await;
    let (result, deltas) = stream(&model(&server), &answer()).await;
    let completion = result.unwrap();
    // The answer is plain text, streamed as `text` deltas as it is written.
    assert_eq!(completion.content, TEXT);
    assert_eq!(deltas.concat(), TEXT);
    assert_eq!(deltas.len(), TEXT.chars().count().div_ceil(4));
    assert_eq!(deltas[0], "Patc");
    assert!(
        calls_have_no_tool(&server),
        "the answer forces no tool and carries its cap"
    );
    assert_eq!(
        completion.tokens,
        Some(TokenCount {
            prompt: 1234,
            completion: 56,
            reasoning: 0
        })
    );
    let calls = server.recorded();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].path,
        format!("/model/{}/converse-stream", MODEL.replace(':', "%3A"))
    );
    assert!(calls[0].streamed());
}

#[tokio::test]
async fn a_stream_cut_mid_way_is_transient_after_the_deltas_sent() {
    let server = start(Script::new().on(
        "generate_answer",
        [Reply::answer(TEXT).chunked(4).cut_after(3)],
    ))
    .await;
    let (result, deltas) = stream(&model(&server), &answer()).await;
    let error = result.unwrap_err();
    assert!(matches!(error, LlmError::Transport(_)), "{error:?}");
    assert_eq!(error.class(), ErrorClass::Transient);
    assert_eq!(deltas, ["Patc", "h ca", "nker"]);
}

#[tokio::test]
async fn errors_before_the_stream_are_classified_like_unstreamed_ones() {
    let server = start(Script::new().on("generate_answer", [Reply::status(429)])).await;
    let (result, deltas) = stream(&model(&server), &answer()).await;
    assert_eq!(result.unwrap_err().class(), ErrorClass::Transient);
    assert!(deltas.is_empty());
    let server = start(Script::new().on("generate_answer", [Reply::status(400)])).await;
    let (result, _) = stream(&model(&server), &answer()).await;
    assert_eq!(result.unwrap_err().class(), ErrorClass::Permanent);
}

#[tokio::test]
async fn the_request_timeout_bounds_the_whole_stream() {
    let server = start(
        Script::new().on(
            "generate_answer",
            [Reply::answer(TEXT)
                .chunked(1)
                .every(Duration::from_millis(100))],
        ),
    )
    .await;
    let (result, deltas) = stream(
        &model(&server),
        &request(Task::GenerateAnswer, Duration::from_millis(300)),
    )
    .await;
    assert_eq!(
        result.unwrap_err(),
        LlmError::Timeout {
            after: Duration::from_millis(300)
        }
    );
    assert!(deltas.len() < TEXT.len(), "{deltas:?}");
}

#[tokio::test]
async fn ask_metered_with_a_sink_charges_the_reported_tokens_of_one_streamed_call() {
    let server = start(
        Script::new()
            .on("generate_answer", [Reply::answer(TEXT).chunked(5)])
            .usage(321, 12),
    )
    .await;
    let (text, seen, meter) = streamed_answer(&model(&server), &answer()).await;
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
    assert!(seen.len() > 1);
}

#[tokio::test]
async fn an_empty_model_id_is_rejected_up_front() {
    let server = start(Script::new()).await;
    let error = BedrockModel::new(&server.sdk_config(), BedrockConfig::new("  ")).unwrap_err();
    assert!(matches!(error, LlmError::Config(_)), "{error:?}");
    assert_eq!(model(&server).name(), "bedrock");
    assert_eq!(model(&server).cache_scope(), format!("bedrock {MODEL}"));
}
