//! The answer of a run: one plain-text call streamed as it is written, its prompt fitted to the
//! model's window, checked against the floor every answer must pass ([`super::floor`]), and
//! the extractive fallback when the model stays down or its answers stay under the floor.

use super::floor::{self, Unusable};
use super::model_call::{fitting, fixed_tokens, request};
use super::prompt_fit::{self, fit_documents, Fit};
use super::quoted::Quoted;
use super::research;
use super::{RagError, RagGraph, RagState, RunEvent};
use crate::engine::StepCtx;
use crate::error::Classify;
use crate::knowledge::Document;
use crate::llm::{write_answer, LlmError, Task, Written};
use std::sync::atomic::{AtomicU32, Ordering};

/// An answer the model wrote that passed the floor.
pub(super) struct Answered {
    /// The answer.
    pub(super) written: Written,
    /// The number of the generation attempt that wrote it.
    pub(super) attempt: u32,
    /// What was left out of the prompt to fit the model's window.
    pub(super) fit: Fit,
    /// Why the attempt before it was under the floor, when it was asked for once more.
    pub(super) under_floor: Option<Unusable>,
    /// The passages it was written from when they are not the run's documents: the attempt
    /// before it was written from memory, and a search with its words found the passages
    /// that hold what it said ([`super::research`]). They are its sources instead.
    pub(super) researched: Option<Vec<Document>>,
    /// The answer is the first one, written from memory, which the passages its words found
    /// support: asked for again from them, the model wrote one under the floor.
    pub(super) first_kept: bool,
}

/// An answer the model could not write although the run had documents: quoted from them
/// instead ([`crate::llm::extractive_answer`]), with why.
pub(super) struct Fallback {
    /// The extractive answer.
    pub(super) text: String,
    /// The model's last error, or what was wrong with its last answer.
    pub(super) error: String,
    /// Why the model's answer was not used.
    pub(super) why: Quoted,
    /// The number of the last generation attempt (its answer discarded).
    pub(super) attempt: u32,
    /// The passages the quote was drawn from, when they are more than the run's documents
    /// (the model's answers were unusable, so the passages its grades set aside count too).
    pub(super) documents: Option<Vec<Document>>,
    /// Every answer of the model under the floor was written from memory
    /// ([`Unusable::is_from_memory`]): it says what its passages do not hold, which shows
    /// nothing broken in the model.
    pub(super) from_memory: bool,
}

/// True when the model failed for a reason the caller cannot fix: time-outs and server
/// errors after their retries, replies that stayed unusable, a prompt still too long. Not an
/// authentication, configuration or request error, which must fail loudly.
pub(super) fn unavailable(error: &RagError) -> bool {
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

/// [`generate_answer`] checked against the floor: an answer under it is discarded and asked
/// for once more, with a hint of what was wrong; a second one under it, or a model that is
/// unavailable, gives the extractive fallback (when the run found documents).
pub(super) async fn generate_or_quote(
    graph: &RagGraph,
    ctx: &StepCtx<'_>,
    state: &RagState,
) -> Result<Result<Answered, Fallback>, RagError> {
    let question = state.request.question.as_str();
    let mut under_floor = None;
    let mut attempts_before = state.generations;
    let mut researched: Option<Vec<Document>> = None;
    let mut from_memory = true;
    // The answer written from memory whose words found `researched`, with its attempt.
    let mut from_memory_answer: Option<(Written, u32)> = None;
    for _ in 0..2 {
        let documents = researched.as_deref().unwrap_or(&state.documents);
        // Asked again from the passages its words found, the model is asked afresh: the hint
        // is about the passages it was given before (told to keep to documents that do not
        // hold the answer, Qwen2.5-Coder 1.5B answered "[1]" from du(1)'s page).
        let hint = under_floor
            .as_ref()
            .filter(|_| researched.is_none())
            .map(Unusable::hint);
        let (written, attempt, fit) = match generate_answer(
            graph,
            ctx,
            state,
            documents,
            attempts_before,
            hint,
        )
        .await
        {
            Ok(answer) => answer,
            Err(error) if unavailable(&error) && !documents.is_empty() => {
                tracing::warn!(%error, "the model cannot answer: quoting the documents instead");
                return Ok(Err(Fallback {
                    text: crate::llm::extractive_answer(question, documents),
                    error: error.to_string(),
                    why: Quoted::Unavailable,
                    attempt: attempts_before,
                    documents: researched,
                    from_memory: false,
                }));
            }
            Err(error) => return Err(error),
        };
        let given = &documents[..documents.len() - fit.dropped];
        match floor::check(&written.text, question, given) {
            Ok(()) => {
                return Ok(Ok(Answered {
                    written,
                    attempt,
                    fit,
                    under_floor,
                    researched,
                    first_kept: false,
                }))
            }
            Err(unusable) => {
                tracing::warn!(attempt, reason = %unusable.describe(), "answer under the floor: discarded");
                graph.events.emit(RunEvent::Discarded { attempt });
                attempts_before = attempt;
                from_memory &= unusable.is_from_memory();
                if unusable.is_from_memory() && researched.is_none() {
                    // Written from memory: the passages that hold what it says may be
                    // elsewhere. It is asked for once more from them, not from these.
                    researched =
                        research::sources_for_answer(graph, state, ctx, &written.text).await;
                    if researched.is_some() {
                        from_memory_answer = Some((written, attempt));
                    }
                    under_floor = Some(unusable);
                } else if let (Some(found), Some((first, attempt))) =
                    (&researched, from_memory_answer.take())
                {
                    // Asked again from the passages its first answer's words found, the model
                    // wrote one under the floor (Qwen2.5-Coder 1.5B: "[1]"). The first answer
                    // stands on those passages: it is the answer, cited from them.
                    // Its markers numbered other passages.
                    let text = super::markers::without_markers(&first.text);
                    if floor::check(&text, question, found).is_ok() {
                        return Ok(Ok(Answered {
                            written: Written { text, ..first },
                            attempt,
                            fit: Fit::default(),
                            under_floor,
                            researched,
                            first_kept: true,
                        }));
                    }
                    under_floor = Some(unusable);
                } else {
                    under_floor = Some(unusable);
                }
            }
        }
    }
    // A model whose answers stay under the floor is not trusted with relevance either: the
    // quote draws on every passage retrieved, the ones its grades set aside included.
    let unusable = under_floor.map(|u| u.describe()).unwrap_or_default();
    let changed = researched.is_some() || !state.graded_out.is_empty();
    let mut every = researched.unwrap_or_else(|| state.documents.clone());
    every.extend(state.graded_out.iter().cloned());
    Ok(Err(Fallback {
        text: crate::llm::extractive_answer(question, &every),
        error: format!("{unusable} (twice)"),
        why: Quoted::Unusable,
        attempt: attempts_before,
        documents: changed.then_some(every),
        from_memory,
    }))
}

/// The answer call (plain text), streamed to the run's events as `token`s when someone
/// listens. Every try is a new generation attempt; a try whose stream broke is `discarded`
/// before the retry. The prompt is fitted to the model's window first (older thread turns,
/// then the lowest ranked documents, are left out). Returns the answer, the number of the
/// attempt that produced it, and what was left out.
///
/// `attempts_before` numbers the attempts; `hint`, on the second ask after an answer under the
/// floor, is added to the instruction.
async fn generate_answer(
    graph: &RagGraph,
    ctx: &StepCtx<'_>,
    state: &RagState,
    documents: &[Document],
    attempts_before: u32,
    hint: Option<&str>,
) -> Result<(Written, u32, Fit), RagError> {
    let question = state.request.question.as_str();
    // A thread's answer prompt also sees the recent turns.
    let turns = state
        .thread
        .as_ref()
        .map_or(&[][..], |t| t.history.as_slice());
    let attempt = AtomicU32::new(attempts_before);
    let attempt = &attempt;
    fitting(graph, Task::GenerateAnswer, |room| async move {
        let keep = prompt_fit::fit_history(turns, room.history_share(), |t| {
            prompt_fit::tokens(&t.question) + prompt_fit::tokens(&t.answer)
        });
        let history = super::thread::answer_history(&turns[turns.len() - keep..]);
        let fixed = fixed_tokens(Task::GenerateAnswer, question, None, None)
            + history.as_deref().map_or(0, prompt_fit::tokens);
        let (documents, mut fit) = fit_documents(documents, room, fixed);
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
            if let (Some(hint), Some(system)) = (hint, request.messages.first_mut()) {
                system.content.push(' ');
                system.content.push_str(hint);
            }
            request
        };
        let written = ctx
            .retry(Task::GenerateAnswer.schema_name(), || {
                let n = attempt.fetch_add(1, Ordering::SeqCst) + 1;
                if graph.events.is_on() && n > attempts_before + 1 {
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
