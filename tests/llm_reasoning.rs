//! Reasoning models against the scripted servers, provider by provider: DeepSeek-R1 on
//! llama.cpp (a `<think>` block in the content, or a `reasoning_content` field), an o-series
//! model on OpenAI (`max_completion_tokens`, `reasoning_effort`, reasoning tokens in the usage,
//! a cap eaten by thinking) and reasoning models on Bedrock (`reasoningContent` blocks and
//! deltas, Claude's extended thinking); streamed and not. What the model thought is never the
//! answer, never parsed, never streamed, and always counted. Also: stop sequences on the wire.

use crate::support;

use bounded_rag::config::ReasoningEffort;
use bounded_rag::error::{Classify, ErrorClass};
use bounded_rag::llm::{
    ask, write_answer, BedrockConfig, BedrockModel, BinaryScore, ChatModel, ChatRequest, LlmError,
    OpenAiConfig, OpenAiModel, Task, TokenCount,
};
use bounded_rag::usage::Meter;
use serde_json::json;
use std::time::Duration;
use support::bedrock_server::{BedrockScript, ScriptedBedrock};
use support::chat_request::{grade, request_with};
use support::chat_stream::streamed_answer;
use support::llm_server::{Reply, Script, ScriptedLlm};

const ANSWER: &str = "Patch canker is caused by Phytophthora palmivora [1].";
const THOUGHT: &str = "The user asks about patch canker. Document 1 names the pathogen.";
const CLAUDE: &str = "us.anthropic.claude-sonnet-4-20250514-v1:0";

/// The request of `task` with `max_tokens`, 5 s.
fn request(task: Task, max_tokens: u32) -> ChatRequest<'static> {
    request_with(task, Duration::from_secs(5), max_tokens)
}

fn answer() -> ChatRequest<'static> {
    request(Task::GenerateAnswer, 1024)
}

fn openai(server: &ScriptedLlm, effort: Option<ReasoningEffort>) -> OpenAiModel {
    let mut config = OpenAiConfig::new(server.base_url(), "deepseek-r1");
    config.reasoning_effort = effort;
    OpenAiModel::new(config).expect("valid config")
}

fn bedrock(server: &ScriptedBedrock, model: &str, effort: Option<ReasoningEffort>) -> BedrockModel {
    let mut config = BedrockConfig::new(model);
    config.reasoning_effort = effort;
    config.reasoning_tokens = 2048;
    BedrockModel::new(&server.sdk_config(), config).expect("valid config")
}

/// `estimate_tokens` of the engine: a quarter of the characters, rounded up, plus four.
fn estimate(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4) + 4
}

#[tokio::test]
async fn r1_on_llama_cpp_a_think_block_before_the_decision_is_not_parsed_and_one_call_does() {
    let think = format!("<think>\n{THOUGHT} {{\"binary_score\": \"yes\"}}?\n</think>\n\n");
    let server = ScriptedLlm::start(Script::new().on(
        "grade_documents",
        [Reply::raw(format!("{think}{{\"binary_score\": \"no\"}}"))],
    ))
    .await;
    let model = openai(&server, None);
    let completion = model.complete(&grade()).await.unwrap();
    assert_eq!(completion.content, r#"{"binary_score": "no"}"#);
    assert_eq!(
        completion.tokens,
        Some(TokenCount {
            prompt: 100,
            completion: 10,
            reasoning: 0
        })
    );
    // The JSON inside the thinking is not the decision: the one after it is.
    let score: BinaryScore = ask(&model, &grade()).await.unwrap();
    assert!(!score.yes());
    assert_eq!(
        server.calls("grade_documents"),
        2,
        "one call each, no re-ask"
    );
    // No effort configured: a llama.cpp server gets `max_tokens` and temperature 0.
    let body = &server.recorded()[0].body;
    assert_eq!(body["max_tokens"], 32);
    assert_eq!(body["temperature"], 0.0);
    assert!(body.get("reasoning_effort").is_none(), "{body}");
}

#[tokio::test]
async fn r1_streamed_a_think_block_split_across_chunks_never_reaches_the_sink() {
    let content = format!("<think>{THOUGHT}</think>\n\n{ANSWER}");
    let server = ScriptedLlm::start(
        Script::new().on("generate_answer", [Reply::answer(&content).chunked(3)]),
    )
    .await;
    let (text, deltas, meter) = streamed_answer(&openai(&server, None), &answer()).await;
    assert_eq!(text.unwrap(), ANSWER);
    assert_eq!(deltas.concat(), ANSWER);
    // "<th" + "ink" + ">Th": the tag arrived split, and no piece of the block was shown.
    assert!(
        deltas
            .iter()
            .all(|d| !d.contains('<') && !d.contains("Document 1")),
        "{deltas:?}"
    );
    let usage = meter.usage();
    assert_eq!((usage.model_calls, usage.completion_tokens), (1, 10));
    assert!(server.recorded()[0].streamed());
}

#[tokio::test]
async fn reasoning_fields_are_never_the_answer_nor_the_decision_streamed_or_not() {
    for field in ["reasoning_content", "reasoning"] {
        let think = |reply: Reply| match field {
            "reasoning_content" => reply.reasoning_content(THOUGHT),
            _ => reply.reasoning(THOUGHT),
        };
        let server = ScriptedLlm::start(
            Script::new()
                .on("generate_answer", [think(Reply::answer(ANSWER).chunked(5))])
                .on("grade_documents", [think(Reply::yes())]),
        )
        .await;
        let model = openai(&server, None);
        assert_eq!(model.complete(&answer()).await.unwrap().content, ANSWER);
        let (text, deltas, _) = streamed_answer(&model, &answer()).await;
        assert_eq!(text.unwrap(), ANSWER, "{field}");
        assert_eq!(deltas.concat(), ANSWER, "{field}");
        let score: BinaryScore = ask(&model, &grade()).await.unwrap();
        assert!(score.yes());
        assert_eq!(server.total_calls(), 3, "{field}: no re-ask");
    }
}

#[tokio::test]
async fn without_reported_usage_the_thinking_is_estimated_with_the_reply() {
    let server = ScriptedLlm::start(
        Script::new()
            .on(
                "generate_answer",
                [Reply::answer(ANSWER).reasoning_content(THOUGHT)],
            )
            .without_usage(),
    )
    .await;
    let meter = Meter::default();
    let written = write_answer(&openai(&server, None), &answer(), &meter, None)
        .await
        .unwrap();
    assert_eq!(written.text, ANSWER);
    let usage = meter.usage();
    assert!(usage.estimated);
    assert_eq!(usage.reasoning_tokens, estimate(THOUGHT));
    assert_eq!(
        usage.completion_tokens,
        estimate(ANSWER) + estimate(THOUGHT)
    );
}

#[tokio::test]
async fn an_answer_cut_while_thinking_is_empty_and_asked_again_once() {
    let server = ScriptedLlm::start(Script::new().on(
        "generate_answer",
        [
            Reply::answer(&format!("<think>{THOUGHT} Let me also")).at_cap(),
            Reply::answer(ANSWER),
        ],
    ))
    .await;
    let (text, deltas, meter) = streamed_answer(&openai(&server, None), &answer()).await;
    assert_eq!(text.unwrap(), ANSWER);
    assert!(
        deltas.concat().is_empty(),
        "the cut thinking never streams: {deltas:?}"
    );
    assert_eq!(server.calls("generate_answer"), 2);
    assert_eq!(meter.usage().model_calls, 2);

    // Thinking both times: the answer stays empty, a permanent error after two calls.
    let cut = Reply::answer("<think>Hmm").at_cap();
    let server = ScriptedLlm::start(Script::new().on("generate_answer", [cut])).await;
    let error = write_answer(&openai(&server, None), &answer(), &Meter::default(), None)
        .await
        .unwrap_err();
    assert!(
        matches!(error, LlmError::Malformed { attempts: 2, .. }),
        "{error:?}"
    );
    assert_eq!(server.calls("generate_answer"), 2);
}

#[tokio::test]
async fn o_series_gets_max_completion_tokens_and_the_effort_and_reports_reasoning_tokens() {
    let yes = Reply::yes().reasoning_tokens(32);
    let server = ScriptedLlm::start(
        Script::new()
            .on("grade_documents", [yes.o_series()])
            .on(
                "generate_answer",
                [Reply::answer(ANSWER).reasoning_tokens(512).o_series()],
            )
            .usage(100, 40),
    )
    .await;
    // Stop sequences are kept from a reasoning model, which refuses them.
    let mut request = request(Task::GradeDocuments, 32 + 2048);
    request.stop = &["\n\nQuestion:"];
    let model = openai(&server, Some(ReasoningEffort::Low));
    let completion = model.complete(&request).await.unwrap();
    assert_eq!(completion.content, r#"{"binary_score":"yes"}"#);
    assert_eq!(
        completion.tokens,
        Some(TokenCount {
            prompt: 100,
            completion: 40,
            reasoning: 32
        })
    );
    let body = &server.recorded()[0].body;
    assert_eq!(body["max_completion_tokens"], 2080);
    assert_eq!(body["reasoning_effort"], "low");
    for refused in ["max_tokens", "temperature", "stop"] {
        assert!(body.get(refused).is_none(), "{refused}: {body}");
    }

    // Streamed, the reasoning tokens come with the last chunk's usage and reach the meter.
    let (text, _, meter) = streamed_answer(&model, &answer()).await;
    assert_eq!(text.unwrap(), ANSWER);
    let usage = meter.usage();
    assert_eq!((usage.completion_tokens, usage.reasoning_tokens), (40, 512));
    assert_eq!(server.last().unwrap().body["max_completion_tokens"], 1024);

    // The same server refuses a client that does not know it is a reasoning model.
    let error = openai(&server, None).complete(&grade()).await.unwrap_err();
    assert_eq!(
        (error.status(), error.class()),
        (Some(400), ErrorClass::Permanent)
    );
    assert!(error.to_string().contains("'max_tokens'"), "{error}");
    assert_eq!(server.total_calls(), 3);
}

#[tokio::test]
async fn an_o_series_cap_eaten_by_reasoning_is_a_cut_empty_reply() {
    // `finish_reason: "length"`, empty content, every completion token spent thinking.
    let eaten = Reply::raw("").at_cap().reasoning_tokens(40);
    let server = ScriptedLlm::start(
        Script::new()
            .on("grade_documents", [eaten.clone().o_series()])
            .on(
                "generate_answer",
                [eaten.o_series(), Reply::answer(ANSWER).o_series()],
            )
            .usage(100, 40),
    )
    .await;
    let model = openai(&server, Some(ReasoningEffort::High));
    let error = ask::<BinaryScore>(&model, &grade()).await.unwrap_err();
    assert!(
        matches!(
            error,
            LlmError::Malformed {
                schema: "grade_documents",
                attempts: 2,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(server.calls("grade_documents"), 2);

    let (text, deltas, meter) = streamed_answer(&model, &answer()).await;
    assert_eq!(text.unwrap(), ANSWER);
    assert!(deltas.concat().is_empty(), "{deltas:?}");
    assert_eq!(server.calls("generate_answer"), 2);
    let usage = meter.usage();
    assert_eq!(
        (
            usage.model_calls,
            usage.reasoning_tokens,
            usage.completion_tokens
        ),
        (2, 40, 80)
    );
}

#[tokio::test]
async fn bedrock_reasoning_blocks_come_before_the_text_and_the_tool_and_are_neither() {
    let server = ScriptedBedrock::start(BedrockScript::new(
        Script::new()
            .on(
                "generate_answer",
                [Reply::answer(ANSWER).reasoning_content(THOUGHT)],
            )
            .on("grade_documents", [Reply::no().reasoning_content(THOUGHT)]),
    ))
    .await;
    let model = bedrock(&server, "deepseek.r1-v1:0", None);
    let completion = model.complete(&answer()).await.unwrap();
    assert_eq!(completion.content, ANSWER);
    let score: BinaryScore = ask(&model, &grade()).await.unwrap();
    assert!(!score.yes());
    assert_eq!(server.total_calls(), 2, "no re-ask");
    // DeepSeek-R1 thinks by itself: nothing is asked of it.
    for call in server.recorded() {
        assert!(
            call.body["additionalModelRequestFields"].is_null(),
            "{}",
            call.body
        );
        assert_eq!(call.body["inferenceConfig"]["temperature"], 0.0);
    }
}

#[tokio::test]
async fn bedrock_streamed_reasoning_deltas_never_reach_the_sink() {
    let server = ScriptedBedrock::start(BedrockScript::new(Script::new().on(
        "generate_answer",
        [Reply::answer(ANSWER).reasoning_content(THOUGHT).chunked(4)],
    )))
    .await;
    let model = bedrock(&server, "deepseek.r1-v1:0", None);
    let (text, deltas, meter) = streamed_answer(&model, &answer()).await;
    assert_eq!(text.unwrap(), ANSWER);
    assert_eq!(deltas.concat(), ANSWER);
    assert_eq!(deltas.len(), ANSWER.chars().count().div_ceil(4));
    assert_eq!(
        meter.usage().completion_tokens,
        10,
        "outputTokens include the thinking"
    );
    assert!(server.recorded()[0].streamed());

    // Cut at the cap while thinking: nothing streamed, asked again once.
    server.edit_script(|script| {
        *script = BedrockScript::new(Script::new().on(
            "generate_answer",
            [
                Reply::answer("").reasoning_content(THOUGHT).at_cap(),
                Reply::answer(ANSWER),
            ],
        ))
    });
    let (text, deltas, _) = streamed_answer(&model, &answer()).await;
    assert_eq!(text.unwrap(), ANSWER);
    assert!(deltas.is_empty(), "{deltas:?}");
    assert_eq!(server.calls("generate_answer"), 3);
}

#[tokio::test]
async fn claude_thinks_within_its_budget_with_the_tool_offered_and_no_temperature() {
    let server = ScriptedBedrock::start(BedrockScript::new(
        Script::new()
            .on("grade_documents", [Reply::yes().reasoning_content(THOUGHT)])
            .on(
                "generate_answer",
                [Reply::answer(ANSWER).reasoning_content(THOUGHT)],
            ),
    ))
    .await;
    let model = bedrock(&server, CLAUDE, Some(ReasoningEffort::Medium));
    let score: BinaryScore = ask(&model, &request(Task::GradeDocuments, 32 + 2048))
        .await
        .unwrap();
    assert!(score.yes());
    let (text, deltas, _) =
        streamed_answer(&model, &request(Task::GenerateAnswer, 1024 + 2048)).await;
    assert_eq!(text.unwrap(), ANSWER);
    assert_eq!(deltas.concat(), ANSWER);
    let calls = server.recorded();
    assert_eq!(calls.len(), 2);
    for (call, cap) in calls.iter().zip([2080, 3072]) {
        assert_eq!(
            call.body["additionalModelRequestFields"],
            json!({"thinking": {"type": "enabled", "budget_tokens": 2048}})
        );
        assert_eq!(call.max_tokens(), Some(cap));
        assert!(
            call.body["inferenceConfig"]["temperature"].is_null(),
            "{}",
            call.body
        );
    }
    assert_eq!(
        calls[0].body["toolConfig"]["toolChoice"],
        json!({"auto": {}})
    );
    assert_eq!(
        model.cache_scope(),
        format!("bedrock {CLAUDE} thinking 2048")
    );

    // An effort for a model that does not take Claude's thinking, or under its minimum budget,
    // is refused up front; `none` asks for no thinking.
    let sdk = server.sdk_config();
    let mut config = BedrockConfig::new("deepseek.r1-v1:0");
    config.reasoning_effort = Some(ReasoningEffort::High);
    config.reasoning_tokens = 4096;
    let error = BedrockModel::new(&sdk, config.clone()).unwrap_err();
    assert!(
        matches!(&error, LlmError::Config(m) if m.contains("Anthropic")),
        "{error}"
    );
    config.model_id = CLAUDE.into();
    config.reasoning_tokens = 1023;
    let error = BedrockModel::new(&sdk, config.clone()).unwrap_err();
    assert!(error.to_string().contains("at least 1024"), "{error}");
    config.reasoning_effort = Some(ReasoningEffort::None);
    let model = BedrockModel::new(&sdk, config).unwrap();
    assert_eq!(model.cache_scope(), format!("bedrock {CLAUDE}"));
}

#[tokio::test]
async fn stop_sequences_are_sent_in_each_providers_field_and_left_out_when_empty() {
    let stop: &[&str] = &["\nQuestion:", "\nDocuments:"];
    let server = ScriptedLlm::start(Script::defaults()).await;
    let model = openai(&server, None);
    let mut stopped = answer();
    stopped.stop = stop;
    model.complete(&stopped).await.unwrap();
    model.complete(&answer()).await.unwrap();
    let calls = server.recorded();
    assert_eq!(
        calls[0].body["stop"],
        json!(["\nQuestion:", "\nDocuments:"])
    );
    assert!(calls[1].body.get("stop").is_none(), "{}", calls[1].body);

    let server = ScriptedBedrock::start(BedrockScript::new(Script::defaults())).await;
    let model = bedrock(&server, "anthropic.claude-3-5-haiku-20241022-v1:0", None);
    model.complete(&stopped).await.unwrap();
    model.complete(&answer()).await.unwrap();
    let calls = server.recorded();
    assert_eq!(
        calls[0].body["inferenceConfig"]["stopSequences"],
        json!(["\nQuestion:", "\nDocuments:"])
    );
    assert!(
        calls[1].body["inferenceConfig"]
            .get("stopSequences")
            .is_none(),
        "{}",
        calls[1].body
    );
}
