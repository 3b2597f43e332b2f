//! A scripted OpenAI-compatible chat-completions server on loopback.
//!
//! `POST /v1/chat/completions` answers from a [`Script`] keyed by the request's
//! `response_format.json_schema.name` (a request without one is the plain-text answer,
//! `generate_answer`): each name has a queue of [`Reply`]s, served in order,
//! and the last one repeats forever (so `Script::new().on("grade_documents", [Reply::no()])`
//! means "grade_documents always answers no"). Every request is recorded (a [`Recorded`]: its
//! schema name, full JSON body, `Authorization` header, arrival time and whether it asked for
//! a stream), so tests can assert exact call counts and sequences. The server stops when the
//! [`ScriptedLlm`] is dropped.
//!
//! **Usage.** Every successful reply reports deterministic token counts: by default
//! `prompt_tokens` = 100 and `completion_tokens` = 10 per call ([`DEFAULT_USAGE`]), streamed or
//! not. [`Script::usage`] changes them; [`Script::without_usage`] leaves `usage` out (to test
//! the estimate path).
//!
//! **Streams.** A request with `"stream": true` is answered with `text/event-stream`: a first
//! chunk with the assistant role and empty content, the content in chunks of
//! [`DEFAULT_CHUNK_CHARS`] characters (`data: {"choices":[{"index":0,"delta":{"content":…}}]}`),
//! a chunk with `finish_reason` `stop`, then, when `stream_options.include_usage` is true and
//! the script reports usage, a chunk with `"choices": []` and `usage`, then `data: [DONE]`.
//! Per reply: [`Reply::chunked`] sets the chunk size, [`Reply::every`] a pause between content
//! chunks, [`Reply::cut_after`] drops the connection after that many content chunks, and
//! [`Reply::at_cap`] ends the reply with `finish_reason: "length"` (cut at its output cap).
//! [`Reply::overflow`] is llama.cpp's answer to a prompt over the context window.
//!
//! **Reasoning models.** A `<think>…</think>` block is just content ([`Reply::raw`]).
//! [`Reply::reasoning_content`] and [`Reply::reasoning`] add what the model thought in a field of
//! the message of that name (llama.cpp, vLLM and DeepSeek use the first; OpenRouter and Ollama
//! the second), streamed as deltas of that field before the content (chunked like it);
//! [`Reply::reasoning_tokens`] reports `usage.completion_tokens_details.reasoning_tokens`;
//! [`Reply::o_series`] refuses, as OpenAI's reasoning models do, what they do not take. Status
//! replies, `Retry-After`, [`Reply::delayed`] and body overrides behave as for unstreamed
//! requests (a status is answered before any stream; a body override is plain JSON).
//!
//! ```ignore
//! let llm = ScriptedLlm::start(Script::defaults().on("grade_documents", [Reply::no()])).await;
//! let model = OpenAiModel::new(OpenAiConfig::new(llm.base_url(), "test-model"))?;
//! let slow = Reply::answer("It is a fungus.").chunked(4).every(Duration::from_millis(20));
//! ```

use super::scripted_http::{self, next_in, Call, Payload, Replies, Scripted};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

mod stream;

/// Token counts every reply reports unless the script says otherwise: (prompt, completion).
pub const DEFAULT_USAGE: (u64, u64) = (100, 10);

/// Characters per streamed content chunk unless [`Reply::chunked`] says otherwise.
pub const DEFAULT_CHUNK_CHARS: usize = 8;

/// The assistant message of a chat completion, and how it is streamed when asked to be.
#[derive(Debug, Clone)]
pub struct Content {
    /// The message content.
    pub text: String,
    /// Characters per streamed content chunk (at least 1).
    pub chunk_chars: usize,
    /// Pause between two streamed content chunks.
    pub every: Duration,
    /// Drop the connection after this many streamed content chunks (before the stream ends).
    pub cut_after: Option<usize>,
    /// The reply stops at its output cap (`finish_reason: "length"`, Bedrock `max_tokens`).
    pub at_cap: bool,
    /// `usage` to report as (prompt, completion); stamped from the [`Script`] when picked.
    usage: Option<(u64, u64)>,
    /// What the model thought, in a field of its own: (the field's name, the text).
    pub thought: Option<(&'static str, String)>,
    /// `completion_tokens_details.reasoning_tokens` to report with the usage.
    pub reasoning_tokens: Option<u64>,
}

impl Content {
    /// `text`, streamed in [`DEFAULT_CHUNK_CHARS`] chunks without pauses, default usage.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            chunk_chars: DEFAULT_CHUNK_CHARS,
            every: Duration::ZERO,
            cut_after: None,
            at_cap: false,
            usage: Some(DEFAULT_USAGE),
            thought: None,
            reasoning_tokens: None,
        }
    }

    /// `usage` to report as (prompt, completion), if any.
    pub fn usage(&self) -> Option<(u64, u64)> {
        self.usage
    }

    /// `usage` as the wire has it, if any.
    fn usage_json(&self) -> Option<Value> {
        self.usage.map(|(prompt, completion)| {
            let mut usage = json!({
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion
            });
            if let Some(reasoning) = self.reasoning_tokens {
                usage["completion_tokens_details"] = json!({"reasoning_tokens": reasoning});
            }
            usage
        })
    }

    /// The reply's `finish_reason`.
    fn finish_reason(&self) -> &'static str {
        if self.at_cap {
            "length"
        } else {
            "stop"
        }
    }
}

/// What the server does with one request: [`Reply::Ok`] is a chat completion whose message
/// content is the given text (streamed when the request asks), [`Reply::Body`] a whole JSON
/// response body instead.
pub type Reply = scripted_http::Reply<Content>;

/// One request the server received; [`Recorded::name`] is its schema name.
pub type Recorded = Call;

/// A running scripted chat-completions server; stops on drop.
pub type ScriptedLlm = Scripted<Script>;

impl Payload for Content {
    fn error_body(status: u16) -> String {
        json!({"error": {"message": format!("scripted HTTP {status}")}}).to_string()
    }

    fn respond(self, request: &Value, n: usize) -> Response {
        let model = request["model"].as_str().unwrap_or("scripted");
        let id = format!("chatcmpl-{n}");
        if request["stream"] == true {
            return self.stream(request, &id, model);
        }
        let mut message = json!({"role": "assistant", "content": self.text});
        if let Some((field, thought)) = &self.thought {
            message[*field] = json!(thought);
        }
        let mut reply = json!({
            "id": id,
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{
                "index": 0,
                "message": message,
                "finish_reason": self.finish_reason()
            }]
        });
        if let Some(usage) = self.usage_json() {
            reply["usage"] = usage;
        }
        axum::Json(reply).into_response()
    }
}

impl Reply {
    /// A valid JSON content value.
    pub fn json(value: Value) -> Self {
        Reply::Ok(Content::new(value.to_string()))
    }
    /// Verbatim content, typically malformed.
    pub fn raw(content: impl Into<String>) -> Self {
        Reply::Ok(Content::new(content))
    }
    /// `{"binary_score": "yes"}`.
    pub fn yes() -> Self {
        Reply::json(json!({"binary_score": "yes"}))
    }
    /// `{"binary_score": "no"}`.
    pub fn no() -> Self {
        Reply::json(json!({"binary_score": "no"}))
    }
    /// `{"data_source": source}` (`kg_retrieval`, `web_search`, `llm_internal`).
    pub fn route(source: &str) -> Self {
        Reply::json(json!({"data_source": source}))
    }
    /// The answer `text`, plain (`generate_answer` is not JSON).
    pub fn answer(text: &str) -> Self {
        Reply::raw(text)
    }
    /// llama.cpp's answer to a prompt over the context window (400
    /// `exceed_context_size_error`; Bedrock: `ValidationException`).
    pub fn overflow() -> Self {
        Reply::status(400).body(
            json!({"error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 2146,
                "n_ctx": 2048
            }})
            .to_string(),
        )
    }
    /// `{"refined_question": text}`: a rewrite as search words, in the design's shape.
    pub fn refined(text: &str) -> Self {
        Reply::json(json!({"refined_question": text}))
    }

    /// `{"answer": text}`: a rewrite written as the first sentence of a document that
    /// answers (the key the rewrite's schema asks for).
    pub fn hypothetical(text: &str) -> Self {
        Reply::json(json!({"answer": text}))
    }

    /// Streams the content in chunks of `chars` characters (at least 1).
    pub fn chunked(self, chars: usize) -> Self {
        self.content(|c| c.chunk_chars = chars.max(1), "chunked")
    }
    /// Pauses `pause` between two streamed content chunks.
    pub fn every(self, pause: Duration) -> Self {
        self.content(|c| c.every = pause, "every")
    }
    /// Drops the connection after `chunks` streamed content chunks, before the stream ends.
    pub fn cut_after(self, chunks: usize) -> Self {
        self.content(|c| c.cut_after = Some(chunks), "cut_after")
    }
    /// Ends the reply as cut at its output cap (`finish_reason: "length"`).
    pub fn at_cap(self) -> Self {
        self.content(|c| c.at_cap = true, "at_cap")
    }
    /// Adds what the model thought as the message's `reasoning_content` (llama.cpp, vLLM,
    /// DeepSeek; Bedrock: a `reasoningContent` block).
    pub fn reasoning_content(self, thought: &str) -> Self {
        let thought = thought.to_owned();
        self.content(
            |c| c.thought = Some(("reasoning_content", thought)),
            "reasoning_content",
        )
    }
    /// Adds what the model thought as the message's `reasoning` (OpenRouter, Ollama).
    pub fn reasoning(self, thought: &str) -> Self {
        let thought = thought.to_owned();
        self.content(|c| c.thought = Some(("reasoning", thought)), "reasoning")
    }
    /// Reports `completion_tokens_details.reasoning_tokens` with the usage.
    pub fn reasoning_tokens(self, tokens: u64) -> Self {
        self.content(|c| c.reasoning_tokens = Some(tokens), "reasoning_tokens")
    }
    /// This reply as OpenAI's reasoning models give it: only to a request with
    /// `max_completion_tokens` and without `max_tokens`, `stop` or a `temperature` other than 1;
    /// any other gets the 400 OpenAI answers (`unsupported_parameter`, naming the field).
    pub fn o_series(self) -> Self {
        Reply::from_fn(move |body: &Value| {
            let refused = [
                ("max_tokens", body.get("max_tokens").is_some()),
                (
                    "temperature",
                    body.get("temperature").is_some_and(|t| t != 1),
                ),
                ("stop", body.get("stop").is_some()),
                (
                    "max_completion_tokens",
                    body.get("max_completion_tokens").is_none(),
                ),
            ];
            match refused.iter().find(|(_, refused)| *refused) {
                Some((param, _)) => Reply::status(400).body(
                    json!({"error": {
                        "message": format!(
                            "Unsupported parameter: '{param}' is not supported with this model."
                        ),
                        "type": "invalid_request_error",
                        "param": param,
                        "code": "unsupported_parameter"
                    }})
                    .to_string(),
                ),
                None => self.clone(),
            }
        })
    }

    /// Edits the content of an `Ok` reply (through delays).
    fn content(self, edit: impl FnOnce(&mut Content), what: &str) -> Self {
        match self {
            Reply::Ok(mut content) => {
                edit(&mut content);
                Reply::Ok(content)
            }
            Reply::Delay(delay, inner) => inner.content(edit, what).delayed(delay),
            other => panic!("{what} applies to content replies only, not {other:?}"),
        }
    }

    /// The same reply reporting `usage` (through delays and closures).
    fn with_usage(self, usage: Option<(u64, u64)>) -> Self {
        match self {
            Reply::Ok(mut content) => {
                content.usage = usage;
                Reply::Ok(content)
            }
            Reply::Delay(delay, inner) => inner.with_usage(usage).delayed(delay),
            Reply::Held(hold, inner) => inner.with_usage(usage).held(&hold),
            Reply::With(decide) => Reply::from_fn(move |request| decide(request).with_usage(usage)),
            other => other,
        }
    }
}

/// Replies per schema name; the last reply of each queue repeats.
#[derive(Debug, Clone)]
pub struct Script {
    queues: HashMap<String, VecDeque<Reply>>,
    fallback: Option<Reply>,
    usage: Option<(u64, u64)>,
}

impl Default for Script {
    fn default() -> Self {
        Self {
            queues: HashMap::new(),
            fallback: None,
            usage: Some(DEFAULT_USAGE),
        }
    }
}

impl Script {
    /// An empty script: unscripted names get a 400 naming the schema.
    pub fn new() -> Self {
        Self::default()
    }

    /// The happy path: `kg_retrieval`, every grade `yes`, a fixed answer and rewrite.
    pub fn defaults() -> Self {
        Self::new()
            .on("route_query", [Reply::route("kg_retrieval")])
            .on("grade_documents", [Reply::yes()])
            .on("grade_hallucinations", [Reply::yes()])
            .on("grade_answer", [Reply::yes()])
            .on("refine_query", [Reply::refined("refined question")])
            .on("generate_answer", [Reply::answer("Scripted answer [1].")])
            .on(
                "contextualize_question",
                [Reply::json(
                    json!({"standalone_question": "Scripted standalone question?"}),
                )],
            )
    }

    /// Replaces the queue of `name`: replies are served in order and the last one repeats.
    pub fn on(mut self, name: &str, replies: impl IntoIterator<Item = Reply>) -> Self {
        self.queues
            .insert(name.to_owned(), replies.into_iter().collect());
        self
    }

    /// The reply for names without a queue (and requests without a schema name).
    pub fn fallback(mut self, reply: Reply) -> Self {
        self.fallback = Some(reply);
        self
    }

    /// Every reply reports these token counts (instead of [`DEFAULT_USAGE`]).
    pub fn usage(mut self, prompt: u64, completion: u64) -> Self {
        self.usage = Some((prompt, completion));
        self
    }

    /// Replies report no `usage` at all (streamed or not).
    pub fn without_usage(mut self) -> Self {
        self.usage = None;
        self
    }
}

impl Replies for Script {
    type Payload = Content;

    fn next(&mut self, call: &Call) -> Reply {
        let name = call.name();
        self.queues
            .get_mut(name)
            .and_then(next_in)
            .or_else(|| self.fallback.clone())
            .unwrap_or_else(|| {
                Reply::status(400).body(format!("no scripted reply for schema {name:?}"))
            })
            .with_usage(self.usage)
    }
}

impl Call {
    /// The chat request's `response_format.json_schema.name` (Bedrock: the task tool's name,
    /// `toolConfig.tools[0].toolSpec.name`, forced or offered); `generate_answer` for a chat
    /// request without either (the plain-text answer); empty for anything else.
    pub fn name(&self) -> &str {
        self.body["response_format"]["json_schema"]["name"]
            .as_str()
            .or_else(|| self.body["toolConfig"]["tools"][0]["toolSpec"]["name"].as_str())
            .unwrap_or(if self.body["messages"].is_array() {
                "generate_answer"
            } else {
                ""
            })
    }

    /// The request's output cap: `max_tokens`, `max_completion_tokens` or Bedrock's
    /// `inferenceConfig.maxTokens`.
    pub fn max_tokens(&self) -> Option<u64> {
        self.body["max_tokens"]
            .as_u64()
            .or_else(|| self.body["max_completion_tokens"].as_u64())
            .or_else(|| self.body["inferenceConfig"]["maxTokens"].as_u64())
    }

    /// True when the request asked for a stream (`"stream": true`, or Bedrock's
    /// `ConverseStream`).
    pub fn streamed(&self) -> bool {
        self.body["stream"] == true || self.path.ends_with("/converse-stream")
    }
}

impl ScriptedLlm {
    /// Binds `127.0.0.1:0` and serves `script` until dropped.
    pub async fn start(script: Script) -> Self {
        Scripted::serve("/v1/chat/completions", script).await
    }

    /// `http://127.0.0.1:PORT/v1`, the value for `LLM_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr())
    }

    /// Replaces the queue of `name` while the server runs.
    pub fn script(&self, name: &str, replies: impl IntoIterator<Item = Reply>) {
        self.edit_script(|script| *script = std::mem::take(script).on(name, replies));
    }

    /// Requests received for schema `name`.
    pub fn calls(&self, name: &str) -> usize {
        self.recorded().iter().filter(|r| r.name() == name).count()
    }

    /// Schema names in arrival order.
    pub fn sequence(&self) -> Vec<String> {
        self.recorded()
            .iter()
            .map(|r| r.name().to_owned())
            .collect()
    }
}
