//! The chat-completions wire format: the request body, the reply and the streamed chunks.
//! Private to the OpenAI-compatible client; callers see [`ChatRequest`] and [`Completion`].

use crate::config::ReasoningEffort;
use crate::llm::error::excerpt;
use crate::llm::reasoning::{self, Thought};
use crate::llm::{ChatRequest, Completion, Finish, LlmError, Role, TokenCount};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The body of `POST /chat/completions`.
#[derive(Serialize)]
pub(super) struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    /// 0 for repeatable replies; left out for reasoning models (OpenAI's take only 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    /// `LLM_REASONING_EFFORT`, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    /// The request's stop sequences; left out when there are none, and for reasoning models
    /// (OpenAI's refuse `stop`).
    #[serde(skip_serializing_if = "Option::is_none")]
    stop: Option<&'a [&'a str]>,
    /// The task's JSON schema; none for the plain-text answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
    /// The output cap, as most OpenAI-compatible servers read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    /// The output cap, as `api.openai.com` reads it (it refuses `max_tokens` for newer models).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

/// Which field carries the output cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CapField {
    /// `max_tokens`: OpenAI-compatible servers (llama.cpp, vLLM, Ollama, ...).
    MaxTokens,
    /// `max_completion_tokens`: `api.openai.com`, and reasoning models anywhere.
    MaxCompletionTokens,
}

/// How one server is spoken to, besides the request: where the cap goes and the reasoning
/// effort, if any (which also leaves out `temperature` and `stop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Dialect {
    pub(super) cap_field: CapField,
    pub(super) effort: Option<ReasoningEffort>,
}

impl Dialect {
    /// The dialect of a server at `host`: OpenAI itself refuses `max_tokens` for its newer
    /// models, and reasoning models (an effort is configured) want `max_completion_tokens`
    /// everywhere (OpenAI, Azure OpenAI, vLLM and llama.cpp read it); other servers read
    /// `max_tokens` (and not always the newer name).
    pub(super) fn new(host: Option<&str>, effort: Option<ReasoningEffort>) -> Self {
        let cap_field = if host == Some("api.openai.com") || effort.is_some() {
            CapField::MaxCompletionTokens
        } else {
            CapField::MaxTokens
        };
        Self { cap_field, effort }
    }
}

impl<'a> WireRequest<'a> {
    /// The body for `request`: its messages, its task's JSON schema (none for the plain-text
    /// answer), its output cap in the dialect's field, its stop sequences, temperature 0; for a
    /// reasoning model the effort instead of temperature and stop sequences. With `stream`, the
    /// server is asked for server-sent events and a last chunk with `usage`.
    pub(super) fn new(
        model: &'a str,
        request: &'a ChatRequest<'a>,
        stream: bool,
        dialect: Dialect,
    ) -> Self {
        let cap_field = dialect.cap_field;
        let reasoning = dialect.effort.is_some();
        Self {
            model,
            messages: request
                .messages
                .iter()
                .map(|m| WireMessage {
                    role: match m.role {
                        Role::System => "system",
                        Role::User => "user",
                        Role::Assistant => "assistant",
                    },
                    content: &m.content,
                })
                .collect(),
            temperature: (!reasoning).then_some(0.0),
            reasoning_effort: dialect.effort.map(ReasoningEffort::as_str),
            stop: (!reasoning && !request.stop.is_empty()).then_some(request.stop),
            response_format: request.task.is_structured().then(|| ResponseFormat {
                kind: "json_schema",
                json_schema: JsonSchema {
                    name: request.task.schema_name(),
                    schema: request.task.schema(),
                    strict: true,
                },
            }),
            max_tokens: (cap_field == CapField::MaxTokens).then_some(request.max_tokens),
            max_completion_tokens: (cap_field == CapField::MaxCompletionTokens)
                .then_some(request.max_tokens),
            stream,
            stream_options: stream.then_some(StreamOptions {
                include_usage: true,
            }),
        }
    }
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchema<'a>,
}

#[derive(Serialize)]
struct JsonSchema<'a> {
    name: &'a str,
    schema: serde_json::Value,
    strict: bool,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// A whole (non-streamed) reply.
#[derive(Deserialize)]
pub(super) struct WireResponse {
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

impl WireResponse {
    /// The first choice's content (its thinking taken off) and the reported tokens.
    ///
    /// # Errors
    ///
    /// [`LlmError::InvalidResponse`] for a reply without choices, a refusal, or a message
    /// with neither content nor reasoning.
    pub(super) fn into_completion(self) -> Result<Completion, LlmError> {
        let tokens = self.usage.map(WireUsage::count);
        let choice = self.choices.into_iter().next().ok_or_else(no_choices)?;
        let message = choice.message;
        let thought = reasoning_text(&message.reasoning_content, &message.reasoning);
        let content = message_content(message.content, message.refusal, thought)?;
        let Thought { answer, reasoning } = reasoning::split(&content, thought);
        Ok(Completion {
            content: answer,
            reasoning,
            finish: finish(choice.finish_reason.as_deref()),
            tokens,
            cached: false,
        })
    }
}

/// `usage` of a reply (or of the last chunk of a stream).
#[derive(Deserialize)]
pub(super) struct WireUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    /// OpenAI (and DeepSeek) say how many of the completion tokens were reasoning.
    #[serde(default)]
    completion_tokens_details: Option<WireTokenDetails>,
}

#[derive(Deserialize)]
struct WireTokenDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    pub(super) fn count(self) -> TokenCount {
        TokenCount {
            prompt: self.prompt_tokens,
            completion: self.completion_tokens,
            reasoning: self
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireReply,
    #[serde(default)]
    finish_reason: Option<String>,
}

/// `finish_reason` as a [`Finish`]: `length` is a reply cut at its cap; anything else (`stop`,
/// `tool_calls`, none) is taken as whole.
pub(super) fn finish(reason: Option<&str>) -> Finish {
    match reason {
        Some("length") => Finish::Length,
        _ => Finish::Stop,
    }
}

#[derive(Deserialize)]
struct WireReply {
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    /// What a reasoning model thought (llama.cpp, vLLM, DeepSeek).
    #[serde(default)]
    reasoning_content: Option<Value>,
    /// The same, as other servers name it (OpenRouter, Ollama, newer vLLM).
    #[serde(default)]
    reasoning: Option<Value>,
}

/// The text of a message's (or delta's) reasoning fields: `reasoning_content`, else
/// `reasoning` (a server may send both, with the same text); empty when neither is a string.
pub(super) fn reasoning_text<'v>(
    reasoning_content: &'v Option<Value>,
    reasoning: &'v Option<Value>,
) -> &'v str {
    [reasoning_content, reasoning]
        .into_iter()
        .filter_map(|field| field.as_ref()?.as_str())
        .find(|text| !text.is_empty())
        .unwrap_or("")
}

/// One `data:` event of a streamed reply (`chat.completion.chunk`).
#[derive(Deserialize)]
pub(super) struct WireChunk {
    #[serde(default)]
    pub(super) choices: Vec<WireChunkChoice>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
    /// Some servers report a failure inside the stream instead of with a status.
    #[serde(default)]
    pub(super) error: Option<serde_json::Value>,
}

/// A choice of a chunk: a piece of the message and, on the last one, why it ended.
#[derive(Deserialize)]
pub(super) struct WireChunkChoice {
    #[serde(default)]
    pub(super) delta: WireDelta,
    #[serde(default)]
    pub(super) finish_reason: Option<String>,
}

/// A piece of the message.
#[derive(Deserialize, Default)]
pub(super) struct WireDelta {
    #[serde(default)]
    pub(super) content: Option<String>,
    #[serde(default)]
    pub(super) refusal: Option<String>,
    #[serde(default)]
    pub(super) reasoning_content: Option<Value>,
    #[serde(default)]
    pub(super) reasoning: Option<Value>,
}

/// The reply content, or why there is none (a refusal is reported as such). A model that only
/// thought (cut at its cap before it answered) has empty content.
pub(super) fn message_content(
    content: Option<String>,
    refusal: Option<String>,
    reasoning: &str,
) -> Result<String, LlmError> {
    match (content, refusal) {
        (Some(content), _) => Ok(content),
        (None, Some(refusal)) => Err(LlmError::InvalidResponse(format!(
            "the model refused: {}",
            excerpt(&refusal)
        ))),
        (None, None) if !reasoning.is_empty() => Ok(String::new()),
        (None, None) => Err(LlmError::InvalidResponse(
            "the reply message has no content".into(),
        )),
    }
}

/// The error of a reply without choices.
pub(super) fn no_choices() -> LlmError {
    LlmError::InvalidResponse("the reply has no choices".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Message, Task, TaskInputs};
    use std::time::Duration;

    fn request(task: Task) -> ChatRequest<'static> {
        ChatRequest {
            task,
            messages: vec![Message::new(Role::User, "q")],
            inputs: TaskInputs {
                question: "q",
                documents: &[],
                answer: None,
            },
            timeout: Duration::from_secs(1),
            max_tokens: 77,
            stop: &[],
        }
    }

    const LOCAL: Dialect = Dialect {
        cap_field: CapField::MaxTokens,
        effort: None,
    };

    #[test]
    fn the_cap_goes_in_the_field_the_server_reads_and_the_answer_has_no_schema() {
        let grade = request(Task::GradeDocuments);
        let body = serde_json::to_value(WireRequest::new("m", &grade, false, LOCAL)).unwrap();
        assert_eq!(body["max_tokens"], 77);
        assert!(body.get("max_completion_tokens").is_none());
        assert_eq!(
            body["response_format"]["json_schema"]["name"],
            "grade_documents"
        );
        let answer = request(Task::GenerateAnswer);
        let openai = Dialect::new(Some("api.openai.com"), None);
        let body = serde_json::to_value(WireRequest::new("m", &answer, true, openai)).unwrap();
        assert_eq!(body["max_completion_tokens"], 77);
        assert!(body.get("max_tokens").is_none());
        assert!(body.get("response_format").is_none(), "{body}");
        assert_eq!(finish(Some("length")), Finish::Length);
        assert_eq!(finish(Some("stop")), Finish::Stop);
        assert_eq!(finish(None), Finish::Stop);
    }

    #[test]
    fn a_reasoning_effort_sends_the_effort_and_the_newer_cap_without_temperature_or_stop() {
        let mut grade = request(Task::GradeDocuments);
        grade.stop = &["\n\n", "Question:"];
        let body = serde_json::to_value(WireRequest::new("m", &grade, false, LOCAL)).unwrap();
        assert_eq!(body["stop"], serde_json::json!(["\n\n", "Question:"]));
        assert_eq!(body["temperature"], 0.0);
        assert!(body.get("reasoning_effort").is_none());

        let o3 = Dialect::new(Some("127.0.0.1"), Some(ReasoningEffort::Low));
        assert_eq!(o3.cap_field, CapField::MaxCompletionTokens);
        let body = serde_json::to_value(WireRequest::new("m", &grade, false, o3)).unwrap();
        assert_eq!(body["reasoning_effort"], "low");
        assert_eq!(body["max_completion_tokens"], 77);
        for refused in ["stop", "temperature", "max_tokens"] {
            assert!(body.get(refused).is_none(), "{refused}: {body}");
        }
        assert_eq!(Dialect::new(Some("127.0.0.1"), None), LOCAL);
    }

    #[test]
    fn a_reply_loses_its_thinking_and_a_reply_that_only_thought_is_empty() {
        let reply: WireResponse = serde_json::from_value(serde_json::json!({
            "choices": [{"message": {"content": "<think>hmm</think>\n{\"a\":1}"},
                "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 9,
                "completion_tokens_details": {"reasoning_tokens": 4}}
        }))
        .unwrap();
        let completion = reply.into_completion().unwrap();
        assert_eq!(
            (completion.content.as_str(), completion.reasoning.as_str()),
            ("{\"a\":1}", "hmm")
        );
        assert_eq!(completion.tokens.unwrap().reasoning, 4);

        let reply: WireResponse = serde_json::from_value(serde_json::json!({
            "choices": [{"message": {"content": null, "reasoning_content": "Let me",
                "reasoning": "Let me"}, "finish_reason": "length"}]
        }))
        .unwrap();
        let completion = reply.into_completion().unwrap();
        assert_eq!(completion.content, "");
        assert_eq!(completion.reasoning, "Let me", "one field counted once");
        assert_eq!(completion.finish, Finish::Length);
    }
}
