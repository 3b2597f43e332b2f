//! The `contextualize_question` node: the first step of a thread's turn that has earlier
//! turns. One structured call (`contextualize_question` → `{"standalone_question"}`) with the
//! node's retry policy, counted, budgeted and checkpointed like every step. The standalone
//! question then drives routing, retrieval and grading (it becomes `request.question` and the
//! retrieval query); the question as asked stays in the thread context and the response.

use super::history;
use crate::engine::{StepCtx, StepOutput};
use crate::llm::{ask_metered, ChatRequest, Contextualized, Task, TaskInputs};
use crate::rag::{prompts, RagError, RagGraph, RagNode, RagState};
use serde_json::json;

/// Rewrites the follow-up into a standalone question, then starts the run as usual.
pub(crate) async fn contextualize_question(
    graph: &RagGraph,
    state: &mut RagState,
    ctx: &StepCtx<'_>,
) -> Result<StepOutput<RagNode>, RagError> {
    let Some(thread) = state.thread.as_ref() else {
        return Ok(StepOutput::next(
            graph.entry(state),
            json!({ "skipped": true }),
        ));
    };
    let documents = history::as_documents(&thread.history);
    let question = thread.question.as_str();
    let task = Task::ContextualizeQuestion;
    let reply: Contextualized = ctx
        .retry(task.schema_name(), || {
            let request = ChatRequest {
                task,
                messages: prompts::messages(task, question, &documents, None),
                inputs: TaskInputs {
                    question,
                    documents: &documents,
                    answer: None,
                },
                timeout: ctx.remaining(),
                max_tokens: graph.output_cap(task),
            };
            async move {
                ask_metered::<Contextualized>(graph.model.as_ref(), &request, ctx.meter(), None)
                    .await
            }
        })
        .await?;
    let turns = thread.history.len();
    // An empty rewrite says nothing: keep the question as asked.
    let standalone = Some(reply.standalone_question.trim())
        .filter(|q| !q.is_empty())
        .unwrap_or(question)
        .to_owned();
    state.request.question = standalone.clone();
    state.query = standalone.clone();
    if let Some(thread) = state.thread.as_mut() {
        thread.standalone_question = Some(standalone.clone());
    }
    // Then the run goes on as any run starts (speculating when that is on).
    Ok(StepOutput::next(
        graph.entry(state),
        json!({ "standalone_question": standalone, "history_turns": turns }),
    ))
}
