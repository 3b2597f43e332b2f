//! Provider-neutral model access: the [`ChatModel`] trait, typed structured outputs and the
//! bounded re-ask on malformed JSON. Wire structs stay private to each provider module.

mod error;
mod lexical;
mod offline;
mod openai;
mod scripted;
mod structured;
mod task;

pub use error::LlmError;
pub use offline::{extractive_answer, OfflineModel, NO_KNOWLEDGE_ANSWER, NO_MATCH_ANSWER};
pub use openai::{OpenAiConfig, OpenAiModel};
pub use scripted::{Reply, ScriptedModel};
pub use structured::{ask, MAX_REASKS};
pub use task::{Answer, BinaryScore, DataSource, Generated, Refined, RouteDecision, Task};

use crate::retrieval::Document;
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
}

/// A chat model that answers with JSON matching `request.task`'s schema.
///
/// Implementations make exactly one attempt: infrastructure retries belong to the engine,
/// the malformed-JSON re-ask to [`ask`].
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// Returns the raw JSON text of the reply's message content.
    async fn complete(&self, request: &ChatRequest<'_>) -> Result<String, LlmError>;

    /// Short provider name for logs and metadata (`openai`, `offline`).
    fn name(&self) -> &'static str;
}
