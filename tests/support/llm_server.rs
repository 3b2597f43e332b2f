//! A scripted OpenAI-compatible chat-completions server on loopback.
//!
//! `POST /v1/chat/completions` answers from a [`Script`] keyed by the request's
//! `response_format.json_schema.name`: each name has a queue of [`Reply`]s, served in order,
//! and the last one repeats forever (so `Script::new().on("grade_documents", [Reply::no()])`
//! means "grade_documents always answers no"). Every request is recorded (a [`Recorded`]: its
//! schema name, full JSON body, `Authorization` header and arrival time), so tests can assert
//! exact call counts and sequences. The server stops when the [`ScriptedLlm`] is dropped.
//!
//! ```ignore
//! let llm = ScriptedLlm::start(Script::defaults().on("grade_documents", [Reply::no()])).await;
//! let model = OpenAiModel::new(OpenAiConfig::new(llm.base_url(), "test-model"))?;
//! ```

use super::scripted_http::{self, next_in, Call, Payload, Replies, Scripted};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};

/// The content of the assistant message of a chat completion.
#[derive(Debug, Clone)]
pub struct Content(pub String);

/// What the server does with one request: [`Reply::Ok`] is a chat completion whose message
/// content is the given text, [`Reply::Body`] a whole response body instead.
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
        axum::Json(json!({
            "id": format!("chatcmpl-{n}"),
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": self.0},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        }))
        .into_response()
    }
}

impl Reply {
    /// A valid JSON content value.
    pub fn json(value: Value) -> Self {
        Reply::Ok(Content(value.to_string()))
    }
    /// Verbatim content, typically malformed.
    pub fn raw(content: impl Into<String>) -> Self {
        Reply::Ok(Content(content.into()))
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
    /// `{"answer": text}`.
    pub fn answer(text: &str) -> Self {
        Reply::json(json!({"answer": text}))
    }
    /// `{"refined_question": text}`.
    pub fn refined(text: &str) -> Self {
        Reply::json(json!({"refined_question": text}))
    }
}

/// Replies per schema name; the last reply of each queue repeats.
#[derive(Debug, Clone, Default)]
pub struct Script {
    queues: HashMap<String, VecDeque<Reply>>,
    fallback: Option<Reply>,
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
    }
}

impl Call {
    /// The chat request's `response_format.json_schema.name`, or empty.
    pub fn name(&self) -> &str {
        self.body["response_format"]["json_schema"]["name"]
            .as_str()
            .unwrap_or("")
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
