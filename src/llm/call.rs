//! One model call: its GenAI client span ([`crate::genai::chat`]) and what it cost,
//! charged to the step's meter. Every call the `llm` layer makes goes through [`call`] (the
//! first of a request and each re-ask), so the spans of a run are its model calls, one each,
//! and their tokens add up to the run's `usage`.

use super::{ChatModel, ChatRequest, Completion, DeltaSink, Finish, LlmError};
use crate::genai::{self, Reply};
use crate::usage::{estimate_tokens, Meter, Usage};
use tracing::Instrument;

/// Calls `model` once (streamed to `on_delta` when given) in its own span, and charges the
/// reply's usage to `meter`.
///
/// # Errors
///
/// Any error of [`ChatModel::complete`], unchanged (recorded on the span as its class).
pub(super) async fn call(
    model: &dyn ChatModel,
    request: &ChatRequest<'_>,
    meter: &Meter,
    on_delta: Option<DeltaSink<'_>>,
) -> Result<Completion, LlmError> {
    let span = genai::chat(
        model.name(),
        model.model(),
        request.task.schema_name(),
        request.max_tokens,
        on_delta.is_some(),
    );
    genai::record_messages(
        &span,
        request
            .messages
            .iter()
            .map(|m| (m.role.as_str(), m.content.as_str())),
    );
    let result = async {
        match on_delta {
            Some(sink) => model.complete_streaming(request, sink).await,
            None => model.complete(request).await,
        }
    }
    .instrument(span.clone())
    .await;
    if let Ok(completion) = &result {
        let usage = usage_of(request, completion);
        meter.charge(&usage);
        genai::record_reply(
            &span,
            &Reply {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
                reasoning_tokens: usage.reasoning_tokens,
                estimated: usage.estimated,
                cache_hit: completion.cached,
                finish_reason: match completion.finish {
                    Finish::Stop => "stop",
                    Finish::Length => "length",
                },
                content: &completion.content,
            },
        );
    }
    genai::record_outcome(&span, crate::error::outcome(&result));
    result
}

/// What one reply cost: a cache hit costs nothing; reported tokens are taken as they are
/// (reasoning tokens included); otherwise both sides, and what the model thought, are estimated
/// with [`estimate_tokens`] and marked as estimated.
pub(super) fn usage_of(request: &ChatRequest<'_>, completion: &Completion) -> Usage {
    if completion.cached {
        return Usage {
            cache_hits: 1,
            ..Usage::default()
        };
    }
    match completion.tokens {
        Some(tokens) => Usage {
            prompt_tokens: tokens.prompt,
            completion_tokens: tokens.completion,
            reasoning_tokens: tokens.reasoning,
            model_calls: 1,
            ..Usage::default()
        },
        None => {
            // What the model thought was written too, so it counts like the reply.
            let reasoning = match completion.reasoning.as_str() {
                "" => 0,
                thought => estimate_tokens(thought),
            };
            Usage {
                prompt_tokens: request
                    .messages
                    .iter()
                    .map(|m| estimate_tokens(&m.content))
                    .sum(),
                completion_tokens: estimate_tokens(&completion.content) + reasoning,
                reasoning_tokens: reasoning,
                estimated: true,
                model_calls: 1,
                ..Usage::default()
            }
        }
    }
}
