//! A scripted Agents for Amazon Bedrock runtime on loopback, in its REST-JSON wire format:
//! knowledge-base `Retrieve` (`POST /knowledgebases/{id}/retrieve`) and `Rerank`
//! (`POST /rerank`), one server per operation.
//!
//! - A retrieve reply lists passages ([`Passage`]) as `retrievalResults` with their S3 location,
//!   score and metadata (the page under `x-amz-bedrock-kb-document-page-number`).
//! - A rerank reply ranks the request's inline sources last first, `numberOfResults` of them.
//! - [`Reply::status`] answers with the Bedrock exception of that status in `__type` and the
//!   `x-amzn-ErrorType` header (429 `ThrottlingException`, 400 `ValidationException`, 403
//!   `AccessDeniedException`, 503 `ServiceUnavailableException`, ...).
//!
//! Clients reach it through `AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME` ([`ScriptedAgent::env`])
//! with fake static credentials; requests are signed but signatures are not checked.

use super::bedrock_filter::{invalid, matches};
use super::scripted_http::{next_in, Call, Payload, Replies, Reply, Scripted};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::collections::VecDeque;

/// The region of the fake credentials.
pub const REGION: &str = "us-east-1";

/// One passage a scripted knowledge base returns.
#[derive(Debug, Clone)]
pub struct Passage {
    /// The passage text.
    pub text: String,
    /// `s3://bucket/key` of its source.
    pub uri: String,
    /// Its page, when the source is paged.
    pub page: Option<u32>,
    /// Its score.
    pub score: f64,
    /// Its metadata attributes (what [`knowledge_base`] filters on).
    pub metadata: serde_json::Map<String, Value>,
}

impl Passage {
    /// A passage of `uri` with `text` and `score`.
    pub fn new(uri: &str, text: &str, score: f64) -> Self {
        Self {
            text: text.into(),
            uri: uri.into(),
            page: None,
            score,
            metadata: serde_json::Map::new(),
        }
    }

    /// The same passage with the metadata attribute `key`.
    pub fn with(mut self, key: &str, value: Value) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }

    /// The same passage on `page`.
    pub fn on_page(mut self, page: u32) -> Self {
        self.page = Some(page);
        self
    }
}

/// What the server answers with on success.
#[derive(Debug, Clone)]
pub enum Answer {
    /// `Retrieve`: these passages.
    Retrieve(Vec<Passage>),
    /// `Rerank`: the sources ranked last first.
    Reversed,
}

/// The name of the Bedrock exception of an HTTP status.
fn exception(status: u16) -> &'static str {
    match status {
        400 => "ValidationException",
        403 => "AccessDeniedException",
        404 => "ResourceNotFoundException",
        429 => "ThrottlingException",
        503 => "ServiceUnavailableException",
        _ => "InternalServerException",
    }
}

impl Payload for Answer {
    fn error_body(status: u16) -> String {
        json!({"__type": exception(status), "message": format!("scripted {status}")}).to_string()
    }

    fn respond(self, request: &Value, _: usize) -> Response {
        match self {
            Answer::Retrieve(passages) => {
                let results: Vec<Value> = passages
                    .iter()
                    .map(|p| {
                        let mut metadata = Value::Object(p.metadata.clone());
                        metadata["x-amz-bedrock-kb-source-uri"] = json!(p.uri);
                        if let Some(page) = p.page {
                            metadata["x-amz-bedrock-kb-document-page-number"] = json!(page);
                        }
                        json!({
                            "content": {"type": "TEXT", "text": p.text},
                            "location": {"type": "S3", "s3Location": {"uri": p.uri}},
                            "score": p.score,
                            "metadata": metadata,
                        })
                    })
                    .collect();
                axum::Json(json!({ "retrievalResults": results })).into_response()
            }
            Answer::Reversed => {
                let n = request["sources"].as_array().map_or(0, Vec::len);
                let top = request["rerankingConfiguration"]["bedrockRerankingConfiguration"]
                    ["numberOfResults"]
                    .as_u64()
                    .map_or(n, |t| t as usize);
                let results: Vec<Value> = (0..n)
                    .rev()
                    .take(top)
                    .map(|i| json!({"index": i, "relevanceScore": (i + 1) as f64 / n as f64}))
                    .collect();
                axum::Json(json!({ "results": results })).into_response()
            }
        }
    }
}

/// The replies of one operation, in order; the last one repeats.
pub type AgentReply = Reply<Answer>;

/// `Retrieve` as a knowledge base holding `passages` answers it: the passages the request's
/// filter lets through ([`super::bedrock_filter`]; an invalid filter is a 400
/// `ValidationException` naming why), in order, at most `numberOfResults`.
pub fn knowledge_base(passages: Vec<Passage>) -> AgentReply {
    Reply::With(std::sync::Arc::new(move |request: &Value| {
        let search = &request["retrievalConfiguration"]["vectorSearchConfiguration"];
        let filter = search.get("filter").filter(|f| !f.is_null());
        if let Some(why) = filter.and_then(invalid) {
            let body = json!({"__type": exception(400), "message": why});
            return Reply::status(400).body(body.to_string());
        }
        let limit = search["numberOfResults"].as_u64().map_or(5, |n| n as usize);
        let kept = passages
            .iter()
            .filter(|p| filter.is_none_or(|f| matches(f, &p.metadata)))
            .take(limit)
            .cloned()
            .collect();
        Reply::Ok(Answer::Retrieve(kept))
    }))
}

struct Queue {
    replies: VecDeque<AgentReply>,
    fallback: Answer,
}

impl Replies for Queue {
    type Payload = Answer;

    fn next(&mut self, _: &Call) -> AgentReply {
        next_in(&mut self.replies).unwrap_or_else(|| Reply::Ok(self.fallback.clone()))
    }
}

/// A running scripted runtime for one operation; stops on drop.
pub struct ScriptedAgent(Scripted<Queue>);

impl ScriptedAgent {
    /// Serves `Retrieve` with `replies` in a thread of its own (for CLI tests).
    pub fn retrieve(replies: impl IntoIterator<Item = AgentReply>) -> Self {
        let queue = Queue {
            replies: replies.into_iter().collect(),
            fallback: Answer::Retrieve(Vec::new()),
        };
        Self(Scripted::serve_in_thread(
            "/knowledgebases/{id}/retrieve",
            queue,
        ))
    }

    /// Serves `Rerank` with `replies` (default: last first) in a thread of its own.
    pub fn rerank(replies: impl IntoIterator<Item = AgentReply>) -> Self {
        let queue = Queue {
            replies: replies.into_iter().collect(),
            fallback: Answer::Reversed,
        };
        Self(Scripted::serve_in_thread("/rerank", queue))
    }

    /// The variables that point the AWS SDK at this server with fake credentials.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME",
                format!("http://{}", self.0.addr()),
            ),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", REGION.into()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
        ]
    }

    /// The requests received, in order.
    pub fn recorded(&self) -> Vec<Call> {
        self.0.recorded()
    }
}
