//! The chat request the model client tests (`llm_openai.rs`, `llm_bedrock.rs`,
//! `llm_reasoning.rs`) send: one system and one user message about patch canker, no documents.

use bounded_rag::llm::{ChatRequest, Message, Role, Task, TaskInputs};
use std::time::Duration;

/// The request of `task` with `timeout` and `max_tokens`.
pub(crate) fn request_with(task: Task, timeout: Duration, max_tokens: u32) -> ChatRequest<'static> {
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
        max_tokens,
        stop: &[],
    }
}

/// The request of `task` with `timeout`: 1024 tokens for an answer, 32 for anything else.
pub(crate) fn request(task: Task, timeout: Duration) -> ChatRequest<'static> {
    let max_tokens = if task == Task::GenerateAnswer {
        1024
    } else {
        32
    };
    request_with(task, timeout, max_tokens)
}

/// A `grade_documents` request, 5 s.
pub(crate) fn grade() -> ChatRequest<'static> {
    request(Task::GradeDocuments, Duration::from_secs(5))
}

/// A `generate_answer` request, 5 s.
pub(crate) fn answer() -> ChatRequest<'static> {
    request(Task::GenerateAnswer, Duration::from_secs(5))
}
