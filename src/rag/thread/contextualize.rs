//! The `contextualize_question` node: the first step of a thread's turn that has earlier
//! turns. One structured call (`contextualize_question` → `{"standalone_question"}`) with the
//! node's retry policy, counted, budgeted and checkpointed like every step. The standalone
//! question then drives routing, retrieval and grading (it becomes `request.question` and the
//! retrieval query); the question as asked stays in the thread context and the response.

use super::earlier_turns;
use crate::engine::{StepCtx, StepOutput};
use crate::llm::{ask_metered, ChatRequest, Contextualized, Task, TaskInputs};
use crate::rag::model_call::{fitting, fixed_tokens};
use crate::rag::prompt_fit::{self, Fit};
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
    let question = thread.question.as_str();
    let task = Task::ContextualizeQuestion;
    let past = thread.history.as_slice();
    // The history is this prompt's material: the newest turns that fit the room, the oldest
    // left out first.
    let fixed = fixed_tokens(task, question, None, None);
    let (reply, dropped): (Contextualized, usize) = fitting(graph, task, |room| async move {
        let keep = prompt_fit::fit_history(past, room.after(fixed), |t| {
            prompt_fit::tokens(&t.standalone_question) + prompt_fit::tokens(&t.answer)
        });
        let documents = earlier_turns::as_documents(&past[past.len() - keep..]);
        let documents = &documents;
        let reply = ctx
            .retry(task.schema_name(), || {
                let request = ChatRequest {
                    task,
                    messages: prompts::messages(task, question, documents, None, None),
                    inputs: TaskInputs {
                        question,
                        documents,
                        answer: None,
                    },
                    timeout: ctx.remaining(),
                    max_tokens: graph.output_cap(task),
                    stop: &[],
                };
                async move {
                    ask_metered::<Contextualized>(graph.model.as_ref(), &request, ctx.meter(), None)
                        .await
                }
            })
            .await?;
        Ok((reply, past.len() - keep))
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
    let mut details = json!({ "standalone_question": standalone, "history_turns": turns });
    Fit {
        history_dropped: dropped,
        ..Fit::default()
    }
    .record(&mut details);
    Ok(StepOutput::next(graph.entry(state), details))
}
