//! Streamed replies: the server-sent events of `"stream": true`, read as they arrive.
//!
//! Each `data:` event is a `chat.completion.chunk`; its `choices[0].delta.content` is handed
//! to the caller's sink at once, and the pieces are joined into the [`Completion`], except what
//! a reasoning model thinks: `reasoning_content` / `reasoning` deltas and a leading `<think>`
//! block of the content are kept back and only counted (`llm::reasoning`). With
//! `stream_options.include_usage`, the last chunk (empty `choices`) carries `usage`; then
//! `data: [DONE]` ends the stream.
//!
//! A stream that ends before `[DONE]` (and before any `finish_reason`) was cut: a transient
//! [`LlmError::Transport`]. A chunk that is not JSON is a permanent
//! [`LlmError::InvalidResponse`], like a whole reply that is not JSON. The request timeout
//! covers the whole stream (reqwest's per-request timeout runs until the body ends).

use super::wire::{finish, message_content, no_choices, reasoning_text, WireChunk};
use super::OpenAiModel;
use crate::llm::error::excerpt;
use crate::llm::reasoning::{Splitter, Thought};
use crate::llm::{Completion, DeltaSink, Finish, LlmError, TokenCount};
use eventsource_stream::{EventStreamError, Eventsource};
use futures::{FutureExt, StreamExt};
use reqwest::header::CONTENT_TYPE;
use reqwest::Response;
use std::time::Duration;

/// The `data` of the event that ends an OpenAI stream.
const DONE: &str = "[DONE]";

impl OpenAiModel {
    /// Reads a 2xx reply to a streamed request, calling `on_delta` with each content piece.
    ///
    /// A server that ignored `"stream": true` and answered with one JSON body is accepted:
    /// its content is handed over in one piece.
    pub(super) async fn read_stream(
        &self,
        response: Response,
        timeout: Duration,
        on_delta: DeltaSink<'_>,
    ) -> Result<Completion, LlmError> {
        if !is_event_stream(&response) {
            let bytes = response
                .bytes()
                .await
                .map_err(|e| self.transport_error(e, timeout))?;
            let completion = self.parse_reply(&bytes)?;
            on_delta(&completion.content);
            return Ok(completion);
        }
        let mut events = response.bytes_stream().eventsource();
        let mut reply = Assembly::default();
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| match e {
                EventStreamError::Transport(e) => self.transport_error(e, timeout),
                EventStreamError::Utf8(e) => {
                    LlmError::InvalidResponse(format!("the event stream is not UTF-8: {e}"))
                }
                EventStreamError::Parser(e) => LlmError::InvalidResponse(format!(
                    "not a server-sent event stream: {}",
                    excerpt(&self.redact(e.input))
                )),
            })?;
            if event.data == DONE {
                reply.done = true;
                // Read the end of the body if it is already here, so the connection can be
                // pooled; never wait for it.
                while let Some(Some(_)) = events.next().now_or_never() {}
                break;
            }
            if let Some(piece) = reply
                .add(&event.data)
                .map_err(|e| e.into_error(|text| self.redact(text)))?
            {
                on_delta(&piece);
            }
        }
        reply.finish(on_delta)
    }
}

/// True when the reply is `text/event-stream` (parameters ignored).
fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("text/event-stream"))
}

/// Why one chunk cannot be used; its text may come from the server, so it is redacted by the
/// caller before it goes into an [`LlmError`].
#[derive(Debug, PartialEq, Eq)]
enum ChunkError {
    /// The chunk is not a `chat.completion.chunk`.
    NotJson { error: String, data: String },
    /// The server reported an error inside the stream.
    Reported(String),
}

impl ChunkError {
    fn into_error(self, redact: impl Fn(String) -> String) -> LlmError {
        match self {
            ChunkError::NotJson { error, data } => LlmError::InvalidResponse(format!(
                "not a chat-completions chunk ({error}): {}",
                excerpt(&redact(data))
            )),
            // The same request may well succeed: the stream started, so the request was fine.
            ChunkError::Reported(error) => LlmError::Transport(format!(
                "the server reported an error mid-stream: {}",
                excerpt(&redact(error))
            )),
        }
    }
}

/// A streamed reply being put together, chunk by chunk.
#[derive(Debug, Default)]
struct Assembly {
    /// The content so far, split into the answer and what the model thought.
    content: Splitter,
    /// A chunk carried content (possibly empty).
    saw_content: bool,
    /// Refusal so far; `None` until a chunk carries some.
    refusal: Option<String>,
    /// From the chunk that carries `usage` (the last one).
    tokens: Option<TokenCount>,
    /// A chunk had at least one choice.
    saw_choice: bool,
    /// A choice carried a `finish_reason`: the content is whole (or cut at its cap).
    finished: Option<Finish>,
    /// `[DONE]` was read.
    done: bool,
}

impl Assembly {
    /// Takes one event's `data`; returns the answer text it carries, if any (never thinking).
    fn add(&mut self, data: &str) -> Result<Option<String>, ChunkError> {
        let chunk: WireChunk = serde_json::from_str(data).map_err(|e| ChunkError::NotJson {
            error: e.to_string(),
            data: data.to_owned(),
        })?;
        if let Some(error) = chunk.error {
            return Err(ChunkError::Reported(error.to_string()));
        }
        if let Some(usage) = chunk.usage {
            self.tokens = Some(usage.count());
        }
        let Some(choice) = chunk.choices.into_iter().next() else {
            return Ok(None);
        };
        self.saw_choice = true;
        if choice.finish_reason.is_some() {
            self.finished = Some(finish(choice.finish_reason.as_deref()));
        }
        let delta = choice.delta;
        if let Some(refusal) = delta.refusal {
            self.refusal.get_or_insert_default().push_str(&refusal);
        }
        let thought = reasoning_text(&delta.reasoning_content, &delta.reasoning);
        self.content.think(thought);
        match delta.content {
            Some(piece) => {
                self.saw_content = true;
                let shown = self.content.push(&piece);
                Ok((!shown.is_empty()).then_some(shown))
            }
            None => Ok(None),
        }
    }

    /// The whole reply, once the stream has ended; answer text held back to the end (see
    /// [`Splitter::finish`]) goes to `on_delta` first.
    fn finish(mut self, on_delta: DeltaSink<'_>) -> Result<Completion, LlmError> {
        if !self.done && self.finished.is_none() {
            return Err(LlmError::Transport(
                "the reply stream ended before it was complete".into(),
            ));
        }
        if !self.saw_choice {
            return Err(no_choices());
        }
        let tail = self.content.finish();
        let Thought { answer, reasoning } = self.content.into_parts();
        let content =
            message_content(self.saw_content.then_some(answer), self.refusal, &reasoning)?;
        if !tail.is_empty() {
            on_delta(&tail);
        }
        Ok(Completion {
            content,
            reasoning,
            finish: self.finished.unwrap_or_default(),
            tokens: self.tokens,
            cached: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Classify, ErrorClass};

    fn piece(content: &str) -> String {
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": content}}]}).to_string()
    }

    const STOP: &str = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
    const USAGE: &str =
        r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}"#;

    #[test]
    fn pieces_are_returned_as_they_come_and_joined_with_the_usage() {
        let mut reply = Assembly::default();
        let role = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#;
        assert_eq!(reply.add(role), Ok(None));
        assert_eq!(reply.add(&piece("{\"ans")), Ok(Some("{\"ans".into())));
        assert_eq!(reply.add(&piece("wer\": 1}")), Ok(Some("wer\": 1}".into())));
        assert_eq!(reply.add(STOP), Ok(None));
        assert_eq!(reply.add(USAGE), Ok(None));
        reply.done = true;
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
        assert!(!completion.cached);
    }

    #[test]
    fn thinking_never_reaches_the_sink_and_held_back_answer_text_does_at_the_end() {
        let mut reply = Assembly::default();
        let thought = |text: &str| {
            serde_json::json!({"choices": [{"index": 0, "delta": {"reasoning_content": text}}]})
                .to_string()
        };
        assert_eq!(reply.add(&thought("Grade it.")), Ok(None));
        assert_eq!(reply.add(&piece("<thi")), Ok(None));
        assert_eq!(reply.add(&piece("nk>more</think>\n")), Ok(None));
        assert_eq!(reply.add(&piece("{}")), Ok(Some("{}".into())));
        reply.add(STOP).unwrap();
        let completion = reply.finish(&|_| {}).unwrap();
        assert_eq!(completion.content, "{}");
        assert_eq!(completion.reasoning, "Grade it.more");

        let mut reply = Assembly::default();
        assert_eq!(reply.add(&piece("<th")), Ok(None));
        reply.add(STOP).unwrap();
        let shown = std::sync::Mutex::new(String::new());
        let completion = reply
            .finish(&|piece| shown.lock().unwrap().push_str(piece))
            .unwrap();
        assert_eq!(completion.content, "<th");
        assert_eq!(shown.into_inner().unwrap(), "<th");

        // Only thinking, cut at the cap: an empty answer, not a reply without content.
        let mut reply = Assembly::default();
        reply.add(&thought("Let me")).unwrap();
        reply
            .add(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#)
            .unwrap();
        let completion = reply.finish(&|_| {}).unwrap();
        assert_eq!(
            (completion.content.as_str(), completion.finish),
            ("", Finish::Length)
        );
    }

    #[test]
    fn a_stream_without_done_or_finish_reason_was_cut_and_is_transient() {
        let mut reply = Assembly::default();
        reply.add(&piece("{\"answer\"")).unwrap();
        let error = reply.finish(&|_| {}).unwrap_err();
        assert!(matches!(error, LlmError::Transport(_)), "{error:?}");
        assert_eq!(error.class(), ErrorClass::Transient);
    }

    #[test]
    fn a_finished_stream_without_done_is_whole_but_has_no_usage() {
        let mut reply = Assembly::default();
        reply.add(&piece("{}")).unwrap();
        reply.add(STOP).unwrap();
        let completion = reply.finish(&|_| {}).unwrap();
        assert_eq!(completion.content, "{}");
        assert_eq!(completion.tokens, None);
    }

    #[test]
    fn a_refusal_is_reported_like_a_whole_reply() {
        let mut reply = Assembly::default();
        let refusal = r#"{"choices":[{"index":0,"delta":{"refusal":"I can't"}}]}"#;
        reply.add(refusal).unwrap();
        reply
            .add(r#"{"choices":[{"index":0,"delta":{"refusal":" help."}}]}"#)
            .unwrap();
        reply.add(STOP).unwrap();
        reply.done = true;
        assert_eq!(
            reply.finish(&|_| {}).unwrap_err(),
            LlmError::InvalidResponse("the model refused: I can't help.".into())
        );
    }

    #[test]
    fn no_choices_at_all_is_permanent() {
        let mut reply = Assembly::default();
        reply.add(USAGE).unwrap();
        reply.done = true;
        let error = reply.finish(&|_| {}).unwrap_err();
        assert_eq!(error, no_choices());
        assert_eq!(error.class(), ErrorClass::Permanent);
    }

    #[test]
    fn a_chunk_that_is_not_json_is_permanent_and_redacted() {
        let mut reply = Assembly::default();
        let error = reply.add("oops sk-secret").unwrap_err();
        let error = error.into_error(|text| text.replace("sk-secret", "[redacted]"));
        assert!(
            matches!(&error, LlmError::InvalidResponse(text) if text.ends_with(": oops [redacted]")),
            "{error:?}"
        );
        assert_eq!(error.class(), ErrorClass::Permanent);
    }

    #[test]
    fn an_error_reported_mid_stream_is_transient() {
        let mut reply = Assembly::default();
        let error = reply
            .add(r#"{"error":{"message":"overloaded"}}"#)
            .unwrap_err()
            .into_error(|text| text);
        assert_eq!(
            error,
            LlmError::Transport(
                r#"the server reported an error mid-stream: {"message":"overloaded"}"#.into()
            )
        );
        assert!(error.is_transient());
    }
}
