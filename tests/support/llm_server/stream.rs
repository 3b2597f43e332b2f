//! The event stream [`ScriptedLlm`](super::ScriptedLlm) answers a request with `"stream": true`
//! with: the `data: {chunk}` frames of OpenAI's chat-completion chunks (role, thought, content
//! pieces with their pauses, `finish_reason`, the usage chunk when asked), `data: [DONE]`, or a
//! dropped connection where the reply is cut.

use axum::body::Body;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;

use super::Content;

impl Content {
    /// The text pieces of a stream: `chunk_chars` characters each.
    fn pieces(&self, text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        chars
            .chunks(self.chunk_chars.max(1))
            .map(|piece| piece.iter().collect())
            .collect()
    }

    /// The `text/event-stream` answer to a streamed request.
    pub(super) fn stream(self, request: &Value, id: &str, model: &str) -> Response {
        let chunk = |choices: Value| {
            let chunk = json!({
                "id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": choices
            });
            format!("data: {chunk}\n\n")
        };
        let mut frames = vec![Frame::Send(
            Duration::ZERO,
            chunk(json!([{"index": 0, "delta": {"role": "assistant", "content": ""}}])),
        )];
        if let Some((field, thought)) = &self.thought {
            for piece in self.pieces(thought) {
                frames.push(Frame::Send(
                    Duration::ZERO,
                    chunk(json!([{"index": 0, "delta": {*field: piece}, "finish_reason": null}])),
                ));
            }
        }
        for (i, piece) in self.pieces(&self.text).into_iter().enumerate() {
            if self.cut_after == Some(i) {
                break;
            }
            let pause = if i == 0 { Duration::ZERO } else { self.every };
            frames.push(Frame::Send(
                pause,
                chunk(json!([{"index": 0, "delta": {"content": piece}, "finish_reason": null}])),
            ));
        }
        if self.cut_after.is_some() {
            frames.push(Frame::Cut);
        } else {
            frames.push(Frame::Send(
                Duration::ZERO,
                chunk(json!([{"index": 0, "delta": {}, "finish_reason": self.finish_reason()}])),
            ));
            let include_usage = request["stream_options"]["include_usage"] == true;
            if let (true, Some(usage)) = (include_usage, self.usage_json()) {
                let last = json!({
                    "id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
                    "choices": [], "usage": usage
                });
                frames.push(Frame::Send(Duration::ZERO, format!("data: {last}\n\n")));
            }
            frames.push(Frame::Send(Duration::ZERO, "data: [DONE]\n\n".into()));
        }
        let body = futures::stream::iter(frames).then(|frame| async move {
            match frame {
                Frame::Send(pause, text) => {
                    if !pause.is_zero() {
                        tokio::time::sleep(pause).await;
                    }
                    Ok(text)
                }
                // A body error makes the server drop the connection mid-response, without
                // flushing what it buffered: yield first, so what was sent is written out.
                Frame::Cut => {
                    tokio::task::yield_now().await;
                    Err(std::io::Error::other("scripted cut"))
                }
            }
        });
        (
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            Body::from_stream(body),
        )
            .into_response()
    }
}

/// One step of a scripted event stream.
enum Frame {
    /// Wait, then send this text.
    Send(Duration, String),
    /// Drop the connection.
    Cut,
}
