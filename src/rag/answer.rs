//! The answer of a run: one plain-text call streamed as it is written, its prompt fitted to the
//! model's window, and the extractive fallback when the model stays down.

use super::model_call::{fitting, fixed_tokens, request};
use super::prompt_fit::{self, fit_documents, Fit};
use super::{RagError, RagGraph, RagState, RunEvent};
use crate::engine::StepCtx;
use crate::error::Classify;
use crate::llm::{write_answer, LlmError, Task, Written};
use std::sync::atomic::{AtomicU32, Ordering};

/// An answer the model could not write although the run had documents: quoted from them
/// instead ([`crate::llm::extractive_answer`]), with why the model could not.
pub(super) struct Fallback {
    /// The extractive answer.
    pub(super) text: String,
    /// The model's last error.
    pub(super) error: String,
}

/// True when the model failed for a reason the caller cannot fix: time-outs and server
/// errors after their retries, replies that stayed unusable, a prompt still too long. Not an
/// authentication, configuration or request error, which must fail loudly.
fn unavailable(error: &RagError) -> bool {
    let RagError::Llm(error) = error else {
        return false;
    };
    error.is_transient()
        || matches!(
            error,
            LlmError::Malformed { .. }
                | LlmError::InvalidResponse(_)
                | LlmError::ContextOverflow(_)
        )
}

/// [`generate_answer`], or the extractive fallback when the model is unavailable and the run
/// found documents (`model_unavailable`).
pub(super) async fn generate_or_quote(
    graph: &RagGraph,
    ctx: &StepCtx<'_>,
    state: &RagState,
) -> Result<Result<(Written, u32, Fit), Fallback>, RagError> {
    match generate_answer(graph, ctx, state).await {
        Ok(answer) => Ok(Ok(answer)),
        Err(error) if unavailable(&error) && !state.documents.is_empty() => {
            tracing::warn!(%error, "the model cannot answer: quoting the documents instead");
            Ok(Err(Fallback {
                text: crate::llm::extractive_answer(&state.request.question, &state.documents),
                error: error.to_string(),
            }))
        }
        Err(error) => Err(error),
    }
}

/// The answer call (plain text), streamed to the run's events as `token`s when someone
/// listens. Every try is a new generation attempt; a try whose stream broke is `discarded`
/// before the retry. The prompt is fitted to the model's window first (older thread turns,
/// then the lowest ranked documents, are left out). Returns the answer, the number of the
/// attempt that produced it, and what was left out.
pub(super) async fn generate_answer(
    graph: &RagGraph,
    ctx: &StepCtx<'_>,
    state: &RagState,
) -> Result<(Written, u32, Fit), RagError> {
    let question = state.request.question.as_str();
    // A thread's answer prompt also sees the recent turns.
    let turns = state
        .thread
        .as_ref()
        .map_or(&[][..], |t| t.history.as_slice());
    let attempt = AtomicU32::new(state.generations);
    let attempt = &attempt;
    fitting(graph, Task::GenerateAnswer, |room| async move {
        let keep = prompt_fit::fit_history(turns, room.history_share(), |t| {
            prompt_fit::tokens(&t.question) + prompt_fit::tokens(&t.answer)
        });
        let history = super::thread::answer_history(&turns[turns.len() - keep..]);
        let fixed = fixed_tokens(Task::GenerateAnswer, question, None, None)
            + history.as_deref().map_or(0, prompt_fit::tokens);
        let (documents, mut fit) = fit_documents(&state.documents, room, fixed);
        fit.history_dropped = turns.len() - keep;
        let (documents, history) = (&documents, &history);
        let answer_request = || {
            let mut request = request(
                graph,
                ctx,
                Task::GenerateAnswer,
                question,
                documents,
                None,
                None,
            );
            if let (Some(history), Some(user)) = (history, request.messages.last_mut()) {
                user.content.insert_str(0, history);
            }
            request
        };
        let written = ctx
            .retry(Task::GenerateAnswer.schema_name(), || {
                let n = attempt.fetch_add(1, Ordering::SeqCst) + 1;
                if graph.events.is_on() && n > state.generations + 1 {
                    graph.events.emit(RunEvent::Discarded { attempt: n - 1 });
                }
                let request = answer_request();
                async move {
                    let sink = |text: &str| {
                        if !text.is_empty() {
                            graph.events.emit(RunEvent::Token {
                                attempt: n,
                                text: text.to_owned(),
                            });
                        }
                    };
                    let sink: Option<crate::llm::DeltaSink<'_>> =
                        graph.events.is_on().then_some(&sink);
                    write_answer(graph.model.as_ref(), &request, ctx.meter(), sink).await
                }
            })
            .await?;
        Ok((written, attempt.load(Ordering::SeqCst), fit))
    })
    .await
}
