//! Amazon Bedrock chat client: `Converse` for structured calls, `ConverseStream` for a streamed
//! answer, through `aws-sdk-bedrockruntime`. The answer is plain text (no tool); every call
//! sends its output cap as `inferenceConfig.maxTokens`.
//!
//! The model is a Bedrock model id or inference profile (`LLM_MODEL`); credentials and region
//! come from the AWS environment (the function role on Lambda), so no key is configured. The
//! task's JSON schema is a forced tool (`wire`), tokens come from the reply's `usage`, and the
//! SDK's retries are off: a failure is classified once (`crate::bedrock`) and left to the
//! engine's retry policy, like every other provider's. A call is bounded by the request's
//! timeout (or `LLM_TIMEOUT_MS`, whichever is shorter), the whole stream included.
//!
//! Reasoning: `reasoningContent` blocks (and a leading `<think>` block of the text) are never
//! the answer nor streamed, only counted (`llm::reasoning`). With `LLM_REASONING_EFFORT` set
//! (not `none`), an Anthropic model thinks: `additionalModelRequestFields.thinking` with
//! `LLM_REASONING_TOKENS` as its budget, which every call's cap already includes (Bedrock wants
//! `maxTokens` above the budget); Claude then takes no temperature and no forced tool, so the
//! task's tool is offered with `toolChoice: auto` (a text reply is re-asked as malformed).

mod event_stream;
mod wire;

use super::{ChatModel, ChatRequest, Completion, DeltaSink, LlmError};
use crate::bedrock_client::{self, Failure, Purpose};
use crate::config::ReasoningEffort;
use crate::error::ErrorClass;
use crate::outbound::status_is_transient;
use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_bedrockruntime::config::http::HttpResponse;
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::types::ConverseOutput;
use aws_sdk_bedrockruntime::Client;
use std::future::Future;
use std::time::Duration;

/// Settings of the Bedrock chat client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BedrockConfig {
    /// A model id (`anthropic.claude-3-5-haiku-20241022-v1:0`), an inference profile id
    /// (`us.anthropic...`) or either's ARN.
    pub model_id: String,
    /// Cap on one call; a request's own `timeout` is used when shorter.
    pub request_timeout: Duration,
    /// Cap on establishing a connection.
    pub connect_timeout: Duration,
    /// `LLM_REASONING_EFFORT`: any effort but `none` turns on an Anthropic model's extended
    /// thinking (other models refuse it: DeepSeek-R1 thinks by itself).
    pub reasoning_effort: Option<ReasoningEffort>,
    /// `LLM_REASONING_TOKENS`: the thinking budget (Claude's minimum is 1024).
    pub reasoning_tokens: u32,
}

impl BedrockConfig {
    /// `model_id` with the default timeouts (those of the OpenAI-compatible client), no
    /// thinking.
    pub fn new(model_id: impl Into<String>) -> Self {
        Self {
            model_id: model_id.into(),
            request_timeout: crate::config::DEFAULT_LLM_TIMEOUT,
            connect_timeout: crate::config::DEFAULT_LLM_CONNECT_TIMEOUT,
            reasoning_effort: None,
            reasoning_tokens: 0,
        }
    }
}

/// Claude's smallest thinking budget.
const MIN_THINKING_BUDGET: u32 = 1_024;

/// The Bedrock chat client. Cheap to clone (the SDK client is shared).
#[derive(Debug, Clone)]
pub struct BedrockModel {
    client: Client,
    model_id: String,
    request_timeout: Duration,
    /// Claude's thinking budget, when it thinks.
    thinking: Option<u32>,
}

impl BedrockModel {
    /// Builds the client once from the process's AWS configuration `sdk`.
    ///
    /// # Errors
    ///
    /// [`LlmError::Config`] for an empty model id, zero timeouts, or a reasoning effort for a
    /// model that is not Anthropic's or with a budget under 1024 tokens.
    pub fn new(sdk: &SdkConfig, config: BedrockConfig) -> Result<Self, LlmError> {
        let model_id = config.model_id.trim().to_owned();
        if model_id.is_empty() {
            return Err(LlmError::Config("the Bedrock model id is empty".into()));
        }
        if config.request_timeout.is_zero() || config.connect_timeout.is_zero() {
            return Err(LlmError::Config(
                "timeouts must be greater than zero".into(),
            ));
        }
        let thinking = match config.reasoning_effort {
            None | Some(ReasoningEffort::None) => None,
            Some(effort) => Some(thinking_budget(&model_id, effort, config.reasoning_tokens)?),
        };
        Ok(Self {
            client: bedrock_client::client(sdk, config.connect_timeout),
            model_id,
            request_timeout: config.request_timeout,
            thinking,
        })
    }

    /// Runs `call` within the request's time limit.
    async fn bounded<T>(
        &self,
        request: &ChatRequest<'_>,
        call: impl Future<Output = Result<T, LlmError>>,
    ) -> Result<T, LlmError> {
        let timeout = request.timeout.min(self.request_timeout);
        if timeout.is_zero() {
            return Err(LlmError::Timeout { after: timeout });
        }
        tokio::time::timeout(timeout, call)
            .await
            .unwrap_or(Err(LlmError::Timeout { after: timeout }))
    }
}

#[async_trait]
impl ChatModel for BedrockModel {
    async fn complete(&self, request: &ChatRequest<'_>) -> Result<Completion, LlmError> {
        let parts = wire::parts(request, self.thinking)?;
        self.bounded(request, async {
            let reply = self
                .client
                .converse()
                .model_id(&self.model_id)
                .set_system(Some(parts.system))
                .set_messages(Some(parts.messages))
                .set_tool_config(parts.tools)
                .inference_config(parts.inference)
                .set_additional_model_request_fields(parts.model_fields)
                .send()
                .await
                .map_err(|e| llm_error(&e, self.request_timeout))?;
            let stop_reason = reply.stop_reason().as_str().to_owned();
            let blocks = match reply.output() {
                Some(ConverseOutput::Message(message)) => message.content(),
                _ => &[],
            };
            let thought = wire::content(blocks, request.task.schema_name(), &stop_reason)?;
            Ok(Completion {
                content: thought.answer,
                reasoning: thought.reasoning,
                finish: wire::finish(&stop_reason),
                tokens: reply.usage().map(wire::tokens),
                cached: false,
            })
        })
        .await
    }

    /// Streams the reply (the answer's text, or a tool's input) as Bedrock generates it; see
    /// the `stream` module.
    async fn complete_streaming(
        &self,
        request: &ChatRequest<'_>,
        on_delta: DeltaSink<'_>,
    ) -> Result<Completion, LlmError> {
        let parts = wire::parts(request, self.thinking)?;
        self.bounded(request, async {
            let output = self
                .client
                .converse_stream()
                .model_id(&self.model_id)
                .set_system(Some(parts.system))
                .set_messages(Some(parts.messages))
                .set_tool_config(parts.tools)
                .inference_config(parts.inference)
                .set_additional_model_request_fields(parts.model_fields)
                .send()
                .await
                .map_err(|e| llm_error(&e, self.request_timeout))?;
            event_stream::read(output.stream, on_delta).await
        })
        .await
    }

    fn name(&self) -> &'static str {
        "bedrock"
    }

    fn model(&self) -> &str {
        &self.model_id
    }

    /// The model id, and the thinking budget when it thinks (it changes replies).
    fn cache_scope(&self) -> String {
        match self.thinking {
            Some(budget) => format!("bedrock {} thinking {budget}", self.model_id),
            None => format!("bedrock {}", self.model_id),
        }
    }
}

/// The thinking budget of `model_id` asked for `effort` (not `none`): Anthropic models only,
/// at least Claude's minimum.
fn thinking_budget(model_id: &str, effort: ReasoningEffort, budget: u32) -> Result<u32, LlmError> {
    if !model_id.to_ascii_lowercase().contains("anthropic.") {
        return Err(LlmError::Config(format!(
            "LLM_REASONING_EFFORT={effort} turns on extended thinking, which Bedrock takes from \
             Anthropic models only, not {model_id}; models such as DeepSeek-R1 think without \
             it: unset LLM_REASONING_EFFORT (LLM_REASONING_TOKENS still raises every cap)"
        )));
    }
    if budget < MIN_THINKING_BUDGET {
        return Err(LlmError::Config(format!(
            "LLM_REASONING_EFFORT={effort} turns on Claude's extended thinking, whose budget \
             LLM_REASONING_TOKENS={budget} must be at least {MIN_THINKING_BUDGET}"
        )));
    }
    Ok(budget)
}

/// A failed Converse or ConverseStream call as an [`LlmError`] of the class decided in
/// [`bedrock_client::failure`]; `timeout` is the client's cap, named by an SDK timeout.
fn llm_error<E>(err: &SdkError<E, HttpResponse>, timeout: Duration) -> LlmError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    match bedrock_client::failure(err, Purpose::Chat) {
        Failure::Timeout => LlmError::Timeout { after: timeout },
        Failure::Connect(m) => LlmError::Connect(m),
        Failure::Broken(m) => LlmError::Transport(m),
        Failure::Config(m) => LlmError::Config(m),
        Failure::Service { message, .. } if super::error::is_context_overflow(&message) => {
            LlmError::ContextOverflow(message)
        }
        Failure::Service {
            status,
            message,
            class,
            ..
        } => match class {
            // A transient code with a status that is not (Bedrock never sends one): still
            // transient, as a transport failure.
            ErrorClass::Transient if !status_is_transient(status) => {
                LlmError::Transport(format!("Bedrock: {message}"))
            }
            ErrorClass::Transient => LlmError::Status {
                status,
                body: message,
                retry_after: None,
            },
            // A permanent code with a retryable status: keep it permanent.
            ErrorClass::Permanent if status_is_transient(status) || status < 400 => {
                LlmError::InvalidResponse(format!("Bedrock: {message}"))
            }
            ErrorClass::Permanent => LlmError::Status {
                status,
                body: message,
                retry_after: None,
            },
        },
    }
}
