//! One model call of a node: its request (prompt, output cap, time left), the node's retry
//! policy, its prompt fitted to the model's window, and the one retry with half the room after
//! a server says the prompt is too long.

use super::prompt_fit::{self, fit_documents, Fit, Room};
use super::prompts::Routing;
use super::{prompts, RagError, RagGraph};
use crate::engine::StepCtx;
use crate::knowledge::Document;
use crate::llm::{ask_metered, ChatRequest, LlmError, Task, TaskInputs};
use serde::de::DeserializeOwned;

/// One structured model call with the node's retry policy; its tokens go to the step's meter.
pub(super) async fn call<T: DeserializeOwned>(
    graph: &RagGraph,
    ctx: &StepCtx<'_>,
    task: Task,
    question: &str,
    documents: &[Document],
    answer: Option<&str>,
) -> Result<T, RagError> {
    Ok(call_fitted(graph, ctx, task, question, documents, answer)
        .await?
        .0)
}

/// [`call`], saying what was left out of its documents to fit the model's window.
pub(super) async fn call_fitted<T: DeserializeOwned>(
    graph: &RagGraph,
    ctx: &StepCtx<'_>,
    task: Task,
    question: &str,
    documents: &[Document],
    answer: Option<&str>,
) -> Result<(T, Fit), RagError> {
    let routing = graph.routing(task);
    let about = routing.as_ref();
    let fixed = fixed_tokens(task, question, answer, about);
    fitting(graph, task, |room| async move {
        let (documents, fit) = fit_documents(documents, room, fixed);
        let documents = &documents;
        let value = ctx
            .retry(task.schema_name(), || {
                let request = request(graph, ctx, task, question, documents, answer, about);
                async move {
                    ask_metered::<T>(graph.model.as_ref(), &request, ctx.meter(), None).await
                }
            })
            .await?;
        Ok((value, fit))
    })
    .await
}

/// Runs `attempt` with the prompt room of a `task` call; when the server answers that the
/// prompt is still over its context window, runs it once more with half the room (never
/// more: the same prompt would fail the same way).
pub(super) async fn fitting<T, F, Fut>(
    graph: &RagGraph,
    task: Task,
    attempt: F,
) -> Result<T, RagError>
where
    F: Fn(Room) -> Fut,
    Fut: std::future::Future<Output = Result<T, RagError>>,
{
    let room = Room::of(graph.window, graph.output_cap(task));
    match attempt(room).await {
        Err(RagError::Llm(LlmError::ContextOverflow(message))) => {
            tracing::warn!(
                task = task.schema_name(),
                %message,
                "prompt over the model's context window: asking once more with half the room"
            );
            attempt(room.halved()).await
        }
        other => other,
    }
}

/// The tokens of a `task` prompt without its documents.
pub(super) fn fixed_tokens(
    task: Task,
    question: &str,
    answer: Option<&str>,
    about: Option<&Routing>,
) -> u64 {
    prompts::messages(task, question, &[], answer, about)
        .iter()
        .map(|m| prompt_fit::tokens(&m.content))
        .sum()
}

pub(super) fn request<'a>(
    graph: &RagGraph,
    ctx: &StepCtx<'_>,
    task: Task,
    question: &'a str,
    documents: &'a [Document],
    answer: Option<&'a str>,
    about: Option<&Routing>,
) -> ChatRequest<'a> {
    ChatRequest {
        task,
        messages: prompts::messages(task, question, documents, answer, about),
        inputs: TaskInputs {
            question,
            documents,
            answer,
        },
        timeout: ctx.remaining(),
        max_tokens: graph.output_cap(task),
        // The answer stops where a small model would start a question of its own.
        stop: if task == Task::GenerateAnswer {
            &prompts::ANSWER_STOP
        } else {
            &[]
        },
    }
}
