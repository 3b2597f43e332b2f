//! Provider-neutral model access: the [`ChatModel`] trait, typed structured outputs (the
//! decisions) with the bounded re-ask on malformed JSON, the plain-text answer
//! ([`write_answer`]), every call with an output cap, and the opt-in response cache
//! ([`CachingModel`]). Wire
//! structs stay private to each provider module.

mod answer_call;
mod bedrock;
mod cache_key;
mod call;
mod contextualize;
mod error;
mod lexical;
mod offline;
mod openai;
mod reasoning;
mod reply_cache;
#[cfg(test)]
mod scripted;
mod small_talk;
mod structured;
mod task;

pub use answer_call::{write_answer, Written};
pub use bedrock::{BedrockConfig, BedrockModel};
pub use error::LlmError;
pub(crate) use lexical::{
    citation_markers, content_words, is_abbreviation, stems, strip_markers, words,
};
pub use offline::{extractive_answer, OfflineModel, NO_KNOWLEDGE_ANSWER};
pub use openai::{OpenAiConfig, OpenAiModel};
pub(crate) use reply_cache::CachingModel;
#[cfg(test)]
pub(crate) use scripted::ScriptedModel;
pub(crate) use small_talk::needs_no_documents;
pub use structured::ask;
pub(crate) use structured::ask_metered;
pub(crate) use task::Contextualized;
pub use task::{Answer, BinaryScore, DataSource, Refined, RouteDecision, Task};

use crate::knowledge::Document;
use async_trait::async_trait;
use std::time::Duration;

/// Who said a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Instructions.
    System,
    /// The caller's turn.
    User,
    /// An earlier model reply (used by the re-ask).
    Assistant,
}

impl Role {
    /// The role's name on the wire and in traces (`system`, `user`, `assistant`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Speaker.
    pub role: Role,
    /// Text.
    pub content: String,
}

impl Message {
    /// A message with the given role.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
        }
    }
}

/// The typed facts behind a request, for providers that do not read prose (the offline one).
#[derive(Debug, Clone, Copy)]
pub struct TaskInputs<'a> {
    /// The question as the user asked it (or as rewritten).
    pub question: &'a str,
    /// Context passages, best first.
    pub documents: &'a [Document],
    /// The generated answer under review (hallucination / answer grading).
    pub answer: Option<&'a str>,
}

/// One structured model call.
#[derive(Debug, Clone)]
pub struct ChatRequest<'a> {
    /// What is asked; fixes the JSON schema name and fields.
    pub task: Task,
    /// Rendered prompt (system + user, plus re-ask turns).
    pub messages: Vec<Message>,
    /// The same facts, typed.
    pub inputs: TaskInputs<'a>,
    /// Upper bound for this one call (the engine passes what is left of the budget).
    pub timeout: Duration,
    /// The most tokens the reply may have, thinking included: sent as the provider's output
    /// cap (`max_tokens`, `max_completion_tokens` or Bedrock's `maxTokens`).
    pub max_tokens: u32,
    /// Where the model stops writing: sent as OpenAI's `stop` (not to reasoning models, which
    /// refuse it) and Bedrock's `inferenceConfig.stopSequences`; empty sends neither.
    pub stop: &'a [&'a str],
}

/// Tokens of one model call, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCount {
    /// Prompt (input) tokens.
    pub prompt: u64,
    /// Completion (output) tokens, reasoning included.
    pub completion: u64,
    /// Of the completion tokens, those the model spent thinking, when the provider reports them
    /// apart (`usage.completion_tokens_details.reasoning_tokens`); 0 when it does not.
    pub reasoning: u64,
}

/// Why the model stopped writing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Finish {
    /// It ended the reply itself (or the provider did not say).
    #[default]
    Stop,
    /// It reached the call's output cap: the reply is cut (`finish_reason: "length"`,
    /// Bedrock `stopReason: "max_tokens"`).
    Length,
}

/// One model reply: the message content and what it cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The text of the reply's message content (JSON for structured calls), without what the
    /// model thought before it (see `reasoning`).
    pub content: String,
    /// What a reasoning model thought before it answered (a `<think>` block or a reasoning
    /// field): never shown as the answer nor parsed, only counted.
    pub(crate) reasoning: String,
    /// Why the model stopped: a [`Finish::Length`] reply was cut at the output cap.
    pub(crate) finish: Finish,
    /// Tokens as the provider reported them (`usage`); `None` when it reported none, in which
    /// case the caller estimates them and marks the estimate.
    pub tokens: Option<TokenCount>,
    /// True when the reply came from the response cache: no model call was made.
    pub cached: bool,
}

impl Completion {
    /// A reply without reported token counts.
    pub(crate) fn new(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            reasoning: String::new(),
            finish: Finish::Stop,
            tokens: None,
            cached: false,
        }
    }
}

/// Receives the content of a streamed reply, piece by piece, as it arrives (never what a
/// reasoning model thinks).
pub(crate) type DeltaSink<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// A chat model: a decision's reply is JSON matching `request.task`'s schema; the answer's
/// (`generate_answer`) is plain text.
///
/// Implementations make exactly one attempt: infrastructure retries belong to the engine,
/// the malformed-JSON re-ask to [`ask`].
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// Returns the reply's message content (raw JSON text for a decision, the text of the
    /// answer), why it ended, and its token counts.
    async fn complete(&self, request: &ChatRequest<'_>) -> Result<Completion, LlmError>;

    /// Like [`ChatModel::complete`], but hands the content to `on_delta` as it is generated
    /// (the provider's streaming API). The returned completion holds the whole content. The
    /// default, for providers that cannot stream, calls `complete` and hands over the content
    /// in one piece.
    async fn complete_streaming(
        &self,
        request: &ChatRequest<'_>,
        on_delta: DeltaSink<'_>,
    ) -> Result<Completion, LlmError> {
        let completion = self.complete(request).await?;
        on_delta(&completion.content);
        Ok(completion)
    }

    /// Short provider name for logs and metadata (`openai`, `offline`, `bedrock`).
    fn name(&self) -> &'static str;

    /// The model asked for (`gen_ai.request.model` in traces): the provider's model name or id;
    /// the provider's name where there is no other.
    fn model(&self) -> &str {
        self.name()
    }

    /// What, besides the request, a cached reply of this model is keyed by: the provider and
    /// the model name (so a cache shared by two models never mixes their answers).
    fn cache_scope(&self) -> String {
        self.name().to_owned()
    }
}
