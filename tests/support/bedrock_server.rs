//! A scripted Amazon Bedrock runtime on loopback: `Converse` JSON, `ConverseStream` event-stream
//! frames (encoded with `aws-smithy-eventstream`, as Bedrock sends them) and `InvokeModel` for
//! Titan Text Embeddings v2.
//!
//! Chat calls are answered from the same [`Script`] as the OpenAI-compatible server
//! ([`super::llm_server`]), keyed by the task tool's name (`toolConfig.tools[0].toolSpec.name`,
//! the schema name, forced or offered; a request without a tool is the plain-text answer,
//! `generate_answer`), so
//! both providers run the same scenarios with the same exact counts:
//! - when the request forces a tool, a content reply that is a JSON object becomes a `toolUse`
//!   block with that input (stop reason `tool_use`); any other content is a `text` block
//!   (`end_turn`), as a model that did not call the tool answers, which the client re-asks
//!   like malformed JSON; without a tool, the content is a `text` block;
//! - [`Reply::at_cap`](super::llm_server::Reply::at_cap) stops with `max_tokens`;
//! - `usage` is the script's (100 + 10 by default), as `inputTokens` / `outputTokens`;
//! - a streamed call (`/converse-stream`) sends `messageStart`, `contentBlockStart`, the
//!   content in `contentBlockDelta`s of [`Reply::chunked`] characters (with [`Reply::every`]
//!   pauses, cut by [`Reply::cut_after`]), `contentBlockStop`, `messageStop` and `metadata`;
//! - what the model thought ([`Reply::reasoning_content`] or [`Reply::reasoning`]) comes first,
//!   as a `reasoningContent` block (`reasoningText` with a signature), streamed as block 0 of
//!   `reasoningContent` deltas (text pieces, then the signature), the content then block 1;
//! - [`Reply::status`] becomes the Bedrock exception of that status (429 `ThrottlingException`,
//!   400 `ValidationException`, 403 `AccessDeniedException`, 500 `InternalServerException`,
//!   503 `ServiceUnavailableException`, ...) with `x-amzn-ErrorType`; a body starting with
//!   `SomeException: ` names the exception ([`exception`]).
//!
//! `InvokeModel` (`/invoke`) answers `{"inputText", "dimensions"}` with the text's
//! [`concept_vector`] padded to `dimensions` and normalised, and `inputTextTokenCount` (its
//! words); [`BedrockScript::embeddings`] queues other replies for it (statuses, as above).
//!
//! Clients reach it through `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` ([`ScriptedBedrock::env`]) or an
//! SDK configuration with its endpoint and fake static credentials
//! ([`ScriptedBedrock::sdk_config`]); requests are signed but signatures are not checked.

use super::embeddings_server::concept_vector;
use super::llm_server::{Content, Script};
use super::scripted_http::{next_in, Call, Payload, Replies, Reply as HttpReply, Scripted};
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_bedrockruntime::config::{Credentials, SharedCredentialsProvider};
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::time::Duration;

/// The region the fake credentials and endpoint are used in.
pub const REGION: &str = "us-east-1";

/// What one Bedrock request is answered with.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A Converse reply, streamed or not.
    Converse {
        /// The model's content and how to stream it.
        content: Content,
        /// The forced tool's name; `None` for a request without a tool (the plain answer).
        tool: Option<String>,
        /// `/converse-stream`.
        stream: bool,
    },
    /// A Titan embeddings answer for the request's `inputText`.
    Embedding,
    /// A Bedrock exception.
    Exception {
        /// HTTP status.
        status: u16,
        /// `ThrottlingException`, ...
        code: String,
        /// The message.
        message: String,
    },
}

/// What the Bedrock server does with one request.
pub type BedrockReply = HttpReply<Answer>;

/// A running scripted Bedrock runtime; stops on drop.
pub type ScriptedBedrock = Scripted<BedrockScript>;

/// The chat script (shared with the OpenAI-compatible server) and the embeddings replies.
#[derive(Debug, Clone, Default)]
pub struct BedrockScript {
    chat: Script,
    embeddings: VecDeque<BedrockReply>,
}

impl BedrockScript {
    /// Chat calls answered from `chat`; embeddings always answered.
    pub fn new(chat: Script) -> Self {
        Self {
            chat,
            embeddings: VecDeque::new(),
        }
    }

    /// `InvokeModel` replies in order, the last repeating (e.g. a throttling, then vectors).
    pub fn embeddings(mut self, replies: impl IntoIterator<Item = BedrockReply>) -> Self {
        self.embeddings = replies.into_iter().collect();
        self
    }
}

/// A Bedrock exception: `Reply::status(status)` whose body names `code`.
pub fn exception(status: u16, code: &str, message: &str) -> super::llm_server::Reply {
    HttpReply::status(status).body(format!("{code}: {message}"))
}

/// The embeddings reply: vectors for the request's text.
pub fn vectors() -> BedrockReply {
    HttpReply::Ok(Answer::Embedding)
}

/// An embeddings exception (see [`exception`]).
pub fn embed_exception(status: u16, code: &str) -> BedrockReply {
    HttpReply::Ok(Answer::Exception {
        status,
        code: code.into(),
        message: format!("scripted {code}"),
    })
}

/// The exception Bedrock answers with `status`.
fn code_of(status: u16) -> &'static str {
    match status {
        400 => "ValidationException",
        403 => "AccessDeniedException",
        404 => "ResourceNotFoundException",
        408 => "ModelTimeoutException",
        424 => "ModelErrorException",
        429 => "ThrottlingException",
        503 => "ServiceUnavailableException",
        s if s >= 500 => "InternalServerException",
        _ => "ValidationException",
    }
}

/// A chat reply of the shared script as a Bedrock answer.
fn convert(reply: super::llm_server::Reply, tool: Option<String>, stream: bool) -> BedrockReply {
    match reply {
        HttpReply::Ok(content) => HttpReply::Ok(Answer::Converse {
            content,
            tool,
            stream,
        }),
        HttpReply::Status { status, body, .. } => {
            // The OpenAI-style default body, or "SomeException: message".
            let text = serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
                .unwrap_or(body);
            let (code, message) = match text.split_once(": ") {
                Some((code, message)) if code.ends_with("Exception") => {
                    (code.to_owned(), message.to_owned())
                }
                _ => (code_of(status).to_owned(), text),
            };
            HttpReply::Ok(Answer::Exception {
                status,
                code,
                message,
            })
        }
        HttpReply::Delay(delay, inner) => convert(*inner, tool, stream).delayed(delay),
        HttpReply::Held(hold, inner) => convert(*inner, tool, stream).held(&hold),
        HttpReply::With(decide) => {
            HttpReply::from_fn(move |request| convert(decide(request), tool.clone(), stream))
        }
        HttpReply::Body(value) => HttpReply::Body(value),
        HttpReply::Text(text) => HttpReply::Text(text),
    }
}

impl Replies for BedrockScript {
    type Payload = Answer;

    fn next(&mut self, call: &Call) -> BedrockReply {
        if call.path.ends_with("/invoke") {
            return next_in(&mut self.embeddings).unwrap_or_else(vectors);
        }
        let stream = call.path.ends_with("/converse-stream");
        let tool = call.body["toolConfig"]["tools"][0]["toolSpec"]["name"]
            .as_str()
            .map(str::to_owned);
        convert(self.chat.next(call), tool, stream)
    }
}

/// One event-stream frame: an event of `kind` with a JSON payload.
fn event(kind: &'static str, payload: Value) -> Vec<u8> {
    let message = Message::new(payload.to_string().into_bytes())
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String("event".into()),
        ))
        .add_header(Header::new(":event-type", HeaderValue::String(kind.into())))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".into()),
        ));
    let mut bytes = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&message, &mut bytes).expect("encode frame");
    bytes
}

/// The usage object of a reply.
fn usage(content: &Content) -> Option<Value> {
    content.usage().map(|(input, output)| {
        json!({"inputTokens": input, "outputTokens": output, "totalTokens": input + output})
    })
}

impl Answer {
    fn converse(content: Content, tool: Option<&str>) -> Response {
        let input = serde_json::from_str::<Value>(&content.text).ok();
        let (block, stop) = match (tool, input) {
            (Some(tool), Some(input)) if input.is_object() => (
                json!({"toolUse": {"toolUseId": "tooluse_1", "name": tool, "input": input}}),
                "tool_use",
            ),
            _ => (json!({"text": content.text}), "end_turn"),
        };
        let stop = if content.at_cap { "max_tokens" } else { stop };
        let mut blocks = Vec::new();
        if let Some((_, thought)) = &content.thought {
            blocks.push(json!({"reasoningContent": {
                "reasoningText": {"text": thought, "signature": "scripted-signature"}
            }}));
        }
        // A reply cut while thinking has nothing after the thought.
        if !(content.thought.is_some() && content.text.is_empty()) {
            blocks.push(block);
        }
        let mut reply = json!({
            "output": {"message": {"role": "assistant", "content": blocks}},
            "stopReason": stop,
            "metrics": {"latencyMs": 1}
        });
        if let Some(usage) = usage(&content) {
            reply["usage"] = usage;
        }
        axum::Json(reply).into_response()
    }

    fn converse_stream(content: Content, tool: Option<&str>) -> Response {
        let is_tool = tool.is_some()
            && serde_json::from_str::<Value>(&content.text).is_ok_and(|v| v.is_object());
        let mut frames: Vec<(Duration, Option<Vec<u8>>)> = vec![(
            Duration::ZERO,
            Some(event("messageStart", json!({"role": "assistant"}))),
        )];
        // The content's block: 1 after a thought's block 0.
        let mut index = 0;
        if let Some((_, thought)) = &content.thought {
            let chars: Vec<char> = thought.chars().collect();
            let mut deltas: Vec<Value> = chars
                .chunks(content.chunk_chars.max(1))
                .map(|piece| json!({"text": piece.iter().collect::<String>()}))
                .collect();
            deltas.push(json!({"signature": "scripted-signature"}));
            for delta in deltas {
                let delta = json!({"contentBlockIndex": 0, "delta": {"reasoningContent": delta}});
                frames.push((Duration::ZERO, Some(event("contentBlockDelta", delta))));
            }
            let stop = json!({"contentBlockIndex": 0});
            frames.push((Duration::ZERO, Some(event("contentBlockStop", stop))));
            index = 1;
        }
        if is_tool {
            let start = json!({"contentBlockIndex": index,
                "start": {"toolUse": {"toolUseId": "tooluse_1", "name": tool}}});
            frames.push((Duration::ZERO, Some(event("contentBlockStart", start))));
        }
        let chars: Vec<char> = content.text.chars().collect();
        for (i, piece) in chars.chunks(content.chunk_chars.max(1)).enumerate() {
            if content.cut_after == Some(i) {
                break;
            }
            let pause = if i == 0 {
                Duration::ZERO
            } else {
                content.every
            };
            let piece: String = piece.iter().collect();
            let delta = if is_tool {
                json!({"toolUse": {"input": piece}})
            } else {
                json!({"text": piece})
            };
            let frame = event(
                "contentBlockDelta",
                json!({"contentBlockIndex": index, "delta": delta}),
            );
            frames.push((pause, Some(frame)));
        }
        if content.cut_after.is_some() {
            frames.push((Duration::ZERO, None));
        } else {
            let stop = match (content.at_cap, is_tool) {
                (true, _) => "max_tokens",
                (false, true) => "tool_use",
                (false, false) => "end_turn",
            };
            frames.push((
                Duration::ZERO,
                Some(event(
                    "contentBlockStop",
                    json!({"contentBlockIndex": index}),
                )),
            ));
            frames.push((
                Duration::ZERO,
                Some(event("messageStop", json!({"stopReason": stop}))),
            ));
            let mut metadata = json!({"metrics": {"latencyMs": 1}});
            if let Some(usage) = usage(&content) {
                metadata["usage"] = usage;
            }
            frames.push((Duration::ZERO, Some(event("metadata", metadata))));
        }
        let body = futures::stream::iter(frames).then(|(pause, frame)| async move {
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            match frame {
                Some(bytes) => Ok(bytes),
                // Drop the connection mid-stream; yield first so what was sent is written.
                None => {
                    tokio::task::yield_now().await;
                    Err(std::io::Error::other("scripted cut"))
                }
            }
        });
        (
            [(header::CONTENT_TYPE, "application/vnd.amazon.eventstream")],
            Body::from_stream(body),
        )
            .into_response()
    }

    fn embedding(request: &Value) -> Response {
        let text = request["inputText"].as_str().unwrap_or_default();
        let dimensions = request["dimensions"].as_u64().unwrap_or(1024) as usize;
        let mut vector = concept_vector(text);
        vector.resize(dimensions.max(vector.len()), 0.0);
        vector.truncate(dimensions);
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 && request["normalize"] == true {
            vector.iter_mut().for_each(|x| *x /= norm);
        }
        axum::Json(json!({
            "embedding": vector,
            "inputTextTokenCount": text.split_whitespace().count()
        }))
        .into_response()
    }
}

impl Payload for Answer {
    fn error_body(status: u16) -> String {
        json!({"message": format!("scripted HTTP {status}")}).to_string()
    }

    fn respond(self, request: &Value, _: usize) -> Response {
        match self {
            Answer::Converse {
                content,
                tool,
                stream: false,
            } => Answer::converse(content, tool.as_deref()),
            Answer::Converse { content, tool, .. } => {
                Answer::converse_stream(content, tool.as_deref())
            }
            Answer::Embedding => Answer::embedding(request),
            Answer::Exception {
                status,
                code,
                message,
            } => (
                StatusCode::from_u16(status).expect("valid status"),
                [
                    (header::CONTENT_TYPE, "application/json"),
                    (
                        header::HeaderName::from_static("x-amzn-errortype"),
                        code.as_str(),
                    ),
                ],
                json!({ "message": message }).to_string(),
            )
                .into_response(),
        }
    }
}

impl ScriptedBedrock {
    /// Binds `127.0.0.1:0` on the current runtime and serves `script` until dropped.
    pub async fn start(script: BedrockScript) -> Self {
        Scripted::serve("/model/{model}/{operation}", script).await
    }

    /// Like [`ScriptedBedrock::start`], served by its own thread (tests that block).
    pub fn start_in_thread(script: BedrockScript) -> Self {
        Scripted::serve_in_thread("/model/{model}/{operation}", script)
    }

    /// `http://127.0.0.1:PORT`, the value for `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr())
    }

    /// The environment of a process that reaches this runtime: the endpoint through
    /// `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, fake static credentials, the region.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", self.endpoint()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", REGION.into()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
        ]
    }

    /// An SDK configuration that reaches this runtime with fake static credentials.
    pub fn sdk_config(&self) -> SdkConfig {
        let credentials = Credentials::new("testing", "testing", None, None, "scripted");
        SdkConfig::builder()
            .http_client(bounded_rag::tls::aws_http_client())
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(REGION))
            .credentials_provider(SharedCredentialsProvider::new(credentials))
            .endpoint_url(self.endpoint())
            .build()
    }

    /// Requests received for schema (tool) `name`.
    pub fn calls(&self, name: &str) -> usize {
        self.recorded().iter().filter(|r| r.name() == name).count()
    }

    /// The `inputText` of every `InvokeModel` request, in arrival order.
    pub fn embedded(&self) -> Vec<String> {
        self.recorded()
            .iter()
            .filter(|c| c.path.ends_with("/invoke"))
            .map(|c| c.body["inputText"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}
