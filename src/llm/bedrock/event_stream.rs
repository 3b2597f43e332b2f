//! Streamed replies: the `ConverseStream` event stream, read as it arrives.
//!
//! Bedrock sends `messageStart`, then per content block `contentBlockStart`,
//! `contentBlockDelta`s and `contentBlockStop`, then `messageStop` (with the stop reason) and
//! `metadata` (with `usage`). The plain-text answer arrives as `text` deltas, a forced tool's
//! input as pieces of JSON text in `toolUse` deltas: each is handed to the caller's sink at
//! once, and the pieces are joined into the [`Completion`] (the tool's input when there is
//! one, else the text: [`crate::llm::ask`] finds text where a tool call was due malformed).
//! `messageStop`'s `max_tokens` stop reason marks a reply cut at its cap. What a reasoning
//! model thinks (`reasoningContent` deltas, a leading `<think>` block of the text) is never
//! handed to the sink, only counted (`llm::reasoning`).
//!
//! A stream that ends before `messageStop` was cut: a transient [`LlmError::Transport`], as is
//! a throttling, unavailable, internal or model-stream error reported inside the stream; a
//! validation error reported there is permanent.

use super::wire::{finish, no_content, tokens};
use crate::bedrock_client::TRANSIENT_CODES;
use crate::llm::reasoning::{Splitter, Thought};
use crate::llm::{Completion, DeltaSink, LlmError, TokenCount};
use crate::outbound::error_chain;
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::primitives::event_stream::EventReceiver;
use aws_sdk_bedrockruntime::types::error::ConverseStreamOutputError;
use aws_sdk_bedrockruntime::types::{
    ContentBlockDelta, ConverseStreamOutput, ReasoningContentBlockDelta,
};

/// Reads the event stream to its end, calling `on_delta` with each piece of the tool's input.
pub(super) async fn read(
    mut events: EventReceiver<ConverseStreamOutput, ConverseStreamOutputError>,
    on_delta: DeltaSink<'_>,
) -> Result<Completion, LlmError> {
    let mut reply = Assembly::default();
    loop {
        match events.recv().await {
            Ok(Some(event)) => {
                if let Some(piece) = reply.add(event) {
                    on_delta(&piece);
                }
            }
            Ok(None) => break,
            Err(e) => return Err(stream_error(&e)),
        }
    }
    reply.finish(on_delta)
}

/// A streamed reply being put together, event by event.
#[derive(Debug, Default)]
struct Assembly {
    /// The tool's input so far; `None` until a `toolUse` delta arrives.
    tool_input: Option<String>,
    /// Text so far (a reply that did not call the tool), split into the answer and thinking;
    /// `reasoningContent` deltas go in as thinking too.
    text: Splitter,
    /// A `reasoningContent` delta arrived (possibly encrypted, without text).
    thought: bool,
    /// From the `metadata` event.
    tokens: Option<TokenCount>,
    /// From `messageStop`: the message is whole.
    stop_reason: Option<String>,
}

impl Assembly {
    /// Takes one event; returns the piece of text or of the tool's input it carries, if any.
    fn add(&mut self, event: ConverseStreamOutput) -> Option<String> {
        match event {
            ConverseStreamOutput::ContentBlockDelta(delta) => match delta.delta? {
                ContentBlockDelta::ToolUse(piece) => {
                    let piece = piece.input;
                    self.tool_input.get_or_insert_default().push_str(&piece);
                    (!piece.is_empty()).then_some(piece)
                }
                ContentBlockDelta::Text(piece) => {
                    let shown = self.text.push(&piece);
                    (!shown.is_empty()).then_some(shown)
                }
                ContentBlockDelta::ReasoningContent(thinking) => {
                    self.thought = true;
                    if let ReasoningContentBlockDelta::Text(piece) = thinking {
                        self.text.think(&piece);
                    }
                    None
                }
                _ => None,
            },
            ConverseStreamOutput::MessageStop(stop) => {
                self.stop_reason = Some(stop.stop_reason.as_str().to_owned());
                None
            }
            ConverseStreamOutput::Metadata(metadata) => {
                self.tokens = metadata.usage.as_ref().map(tokens);
                None
            }
            _ => None,
        }
    }

    /// The whole reply, once the stream has ended; answer text held back to the end (see
    /// [`Splitter::finish`]) goes to `on_delta` first.
    fn finish(mut self, on_delta: DeltaSink<'_>) -> Result<Completion, LlmError> {
        let Some(stop_reason) = self.stop_reason else {
            return Err(LlmError::Transport(
                "the Bedrock reply stream ended before messageStop".into(),
            ));
        };
        let tail = self.text.finish();
        let Thought { answer, reasoning } = self.text.into_parts();
        let content = match self.tool_input {
            Some(input) => input,
            None if !answer.is_empty() || self.thought || !reasoning.is_empty() => {
                if !tail.is_empty() {
                    on_delta(&tail);
                }
                answer
            }
            None => return Err(no_content(&stop_reason)),
        };
        Ok(Completion {
            content,
            reasoning,
            finish: finish(&stop_reason),
            tokens: self.tokens,
            cached: false,
        })
    }
}

/// An error read from the stream: an exception event, a frame that cannot be decoded, or the
/// connection breaking.
fn stream_error<R: std::fmt::Debug>(err: &SdkError<ConverseStreamOutputError, R>) -> LlmError {
    match err {
        SdkError::ServiceError(service) => {
            let code = err.code().unwrap_or("UnknownError");
            let message = err.message().unwrap_or("no message");
            let text = format!("Bedrock reported {code} mid-stream: {message}");
            let transient = TRANSIENT_CODES.contains(&code)
                || matches!(
                    service.err(),
                    ConverseStreamOutputError::ModelStreamErrorException(_)
                        | ConverseStreamOutputError::InternalServerException(_)
                );
            if transient {
                LlmError::Transport(text)
            } else if crate::llm::error::is_context_overflow(message) {
                LlmError::ContextOverflow(text)
            } else {
                LlmError::InvalidResponse(text)
            }
        }
        other => LlmError::Transport(format!(
            "the Bedrock reply stream broke: {}",
            error_chain(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Classify, ErrorClass};
    use aws_sdk_bedrockruntime::types::{
        ContentBlockDeltaEvent, ConverseStreamMetadataEvent, MessageStopEvent, StopReason,
        TokenUsage, ToolUseBlockDelta,
    };

    fn tool_piece(input: &str) -> ConverseStreamOutput {
        ConverseStreamOutput::ContentBlockDelta(
            ContentBlockDeltaEvent::builder()
                .content_block_index(0)
                .delta(ContentBlockDelta::ToolUse(
                    ToolUseBlockDelta::builder().input(input).build().unwrap(),
                ))
                .build()
                .unwrap(),
        )
    }

    fn stop() -> ConverseStreamOutput {
        ConverseStreamOutput::MessageStop(
            MessageStopEvent::builder()
                .stop_reason(StopReason::ToolUse)
                .build()
                .unwrap(),
        )
    }

    fn usage() -> ConverseStreamOutput {
        ConverseStreamOutput::Metadata(
            ConverseStreamMetadataEvent::builder()
                .usage(
                    TokenUsage::builder()
                        .input_tokens(7)
                        .output_tokens(3)
                        .total_tokens(10)
                        .build()
                        .unwrap(),
                )
                .build(),
        )
    }

    #[test]
    fn tool_pieces_are_returned_as_they_come_and_joined_with_the_usage() {
        let mut reply = Assembly::default();
        assert_eq!(reply.add(tool_piece("{\"ans")), Some("{\"ans".into()));
        assert_eq!(reply.add(tool_piece("wer\": 1}")), Some("wer\": 1}".into()));
        assert_eq!(reply.add(stop()), None);
        assert_eq!(reply.add(usage()), None);
        let completion = reply.finish(&|_| {}).unwrap();
        assert_eq!(completion.content, "{\"answer\": 1}");
        assert_eq!(
            completion.tokens,
            Some(TokenCount {
                prompt: 7,
                completion: 3,
                reasoning: 0
            })
        );
    }

    #[test]
    fn text_pieces_stream_as_they_come_and_a_max_tokens_stop_is_a_cut_reply() {
        let text = |piece: &str| {
            ConverseStreamOutput::ContentBlockDelta(
                ContentBlockDeltaEvent::builder()
                    .content_block_index(0)
                    .delta(ContentBlockDelta::Text(piece.into()))
                    .build()
                    .unwrap(),
            )
        };
        let mut reply = Assembly::default();
        assert_eq!(reply.add(text("It is ")), Some("It is ".into()));
        assert_eq!(reply.add(text("a fungus")), Some("a fungus".into()));
        reply.add(ConverseStreamOutput::MessageStop(
            MessageStopEvent::builder()
                .stop_reason(StopReason::MaxTokens)
                .build()
                .unwrap(),
        ));
        let completion = reply.finish(&|_| {}).unwrap();
        assert_eq!(completion.content, "It is a fungus");
        assert_eq!(completion.finish, crate::llm::Finish::Length);
    }

    #[test]
    fn a_stream_without_message_stop_was_cut_and_is_transient() {
        let mut reply = Assembly::default();
        reply.add(tool_piece("{\"answer\""));
        let error = reply.finish(&|_| {}).unwrap_err();
        assert!(matches!(error, LlmError::Transport(_)), "{error:?}");
        assert_eq!(error.class(), ErrorClass::Transient);
    }

    #[test]
    fn reasoning_deltas_and_a_think_block_never_reach_the_sink() {
        let delta = |delta: ContentBlockDelta| {
            ConverseStreamOutput::ContentBlockDelta(
                ContentBlockDeltaEvent::builder()
                    .content_block_index(0)
                    .delta(delta)
                    .build()
                    .unwrap(),
            )
        };
        let thinking = |piece: &str| {
            delta(ContentBlockDelta::ReasoningContent(
                ReasoningContentBlockDelta::Text(piece.into()),
            ))
        };
        let mut reply = Assembly::default();
        assert_eq!(reply.add(thinking("It is ")), None);
        assert_eq!(reply.add(thinking("a fungus.")), None);
        let signature = ReasoningContentBlockDelta::Signature("sig".into());
        assert_eq!(
            reply.add(delta(ContentBlockDelta::ReasoningContent(signature))),
            None
        );
        assert_eq!(
            reply.add(delta(ContentBlockDelta::Text("<think>x</thi".into()))),
            None
        );
        assert_eq!(
            reply.add(delta(ContentBlockDelta::Text("nk> Fungus.".into()))),
            Some("Fungus.".into())
        );
        reply.add(stop());
        let completion = reply.finish(&|_| {}).unwrap();
        assert_eq!(completion.content, "Fungus.");
        assert_eq!(completion.reasoning, "It is a fungus.x");

        // Only (encrypted) thinking before the cap: an empty answer.
        let mut reply = Assembly::default();
        let redacted =
            ReasoningContentBlockDelta::RedactedContent(aws_smithy_types::Blob::new("x"));
        reply.add(delta(ContentBlockDelta::ReasoningContent(redacted)));
        reply.add(stop());
        assert_eq!(reply.finish(&|_| {}).unwrap().content, "");
    }

    #[test]
    fn nothing_at_all_is_permanent() {
        let mut reply = Assembly::default();
        reply.add(stop());
        let error = reply.finish(&|_| {}).unwrap_err();
        assert_eq!(error.class(), ErrorClass::Permanent);
    }
}
