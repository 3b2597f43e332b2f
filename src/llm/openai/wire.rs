//! The chat-completions wire format: the request body, the reply and the streamed chunks.
//! Private to the OpenAI-compatible client; callers see [`ChatRequest`] and [`Completion`].

use crate::llm::error::excerpt;
use crate::llm::{ChatRequest, Completion, Finish, LlmError, Role, TokenCount};
use serde::{Deserialize, Serialize};

/// The body of `POST /chat/completions`.
#[derive(Serialize)]
pub(super) struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    temperature: f32,
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
    /// `max_completion_tokens`: `api.openai.com`.
    MaxCompletionTokens,
}

impl<'a> WireRequest<'a> {
    /// The body for `request`: its messages, its task's JSON schema (none for the plain-text
    /// answer), its output cap in `cap_field`, temperature 0. With `stream`, the server is
    /// asked for server-sent events and a last chunk with `usage`.
    pub(super) fn new(
        model: &'a str,
        request: &'a ChatRequest<'_>,
        stream: bool,
        cap_field: CapField,
    ) -> Self {
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
            temperature: 0.0,
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
    /// The first choice's content and the reported tokens.
    ///
    /// # Errors
    ///
    /// [`LlmError::InvalidResponse`] for a reply without choices, a refusal, or a message
    /// without content.
    pub(super) fn into_completion(self) -> Result<Completion, LlmError> {
        let tokens = self.usage.map(WireUsage::count);
        let choice = self.choices.into_iter().next().ok_or_else(no_choices)?;
        let content = message_content(choice.message.content, choice.message.refusal)?;
        Ok(Completion {
            content,
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
}

impl WireUsage {
    pub(super) fn count(self) -> TokenCount {
        TokenCount {
            prompt: self.prompt_tokens,
            completion: self.completion_tokens,
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
}

/// The reply content, or why there is none (a refusal is reported as such).
pub(super) fn message_content(
    content: Option<String>,
    refusal: Option<String>,
) -> Result<String, LlmError> {
    match (content, refusal) {
        (Some(content), _) => Ok(content),
        (None, Some(refusal)) => Err(LlmError::InvalidResponse(format!(
            "the model refused: {}",
            excerpt(&refusal)
        ))),
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
        }
    }

    #[test]
    fn the_cap_goes_in_the_field_the_server_reads_and_the_answer_has_no_schema() {
        let grade = request(Task::GradeDocuments);
        let body = serde_json::to_value(WireRequest::new("m", &grade, false, CapField::MaxTokens))
            .unwrap();
        assert_eq!(body["max_tokens"], 77);
        assert!(body.get("max_completion_tokens").is_none());
        assert_eq!(
            body["response_format"]["json_schema"]["name"],
            "grade_documents"
        );
        let answer = request(Task::GenerateAnswer);
        let body = serde_json::to_value(WireRequest::new(
            "m",
            &answer,
            true,
            CapField::MaxCompletionTokens,
        ))
        .unwrap();
        assert_eq!(body["max_completion_tokens"], 77);
        assert!(body.get("max_tokens").is_none());
        assert!(body.get("response_format").is_none(), "{body}");
        assert_eq!(finish(Some("length")), Finish::Length);
        assert_eq!(finish(Some("stop")), Finish::Stop);
        assert_eq!(finish(None), Finish::Stop);
    }
}
