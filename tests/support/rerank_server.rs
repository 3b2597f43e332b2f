//! A scripted Cohere/Jina/TEI-compatible rerank server on loopback (`POST /v1/rerank`).
//!
//! [`RerankReply::reversed`] ranks the documents in reverse input order (the last one sent is
//! the most relevant), so a test can tell the reranker's order from the retriever's. Replies
//! are served in order, the last one repeating; every request is recorded.

use super::scripted_http::{next_in, Call, Payload, Replies, Reply, Scripted};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::collections::VecDeque;

/// What a reply carries: rank the documents last first.
#[derive(Debug, Clone)]
pub struct Reversed;

/// What the server does with one request.
pub type RerankReply = Reply<Reversed>;

/// A running scripted rerank server; stops on drop.
pub type ScriptedRerank = Scripted<VecDeque<RerankReply>>;

impl Payload for Reversed {
    fn error_body(status: u16) -> String {
        json!({"message": format!("scripted HTTP {status}")}).to_string()
    }

    fn respond(self, request: &Value, _: usize) -> Response {
        let n = request["documents"].as_array().map_or(0, Vec::len);
        let top = request["top_n"].as_u64().map_or(n, |t| t as usize);
        let results: Vec<Value> = (0..n)
            .rev()
            .take(top)
            .map(|i| json!({"index": i, "relevance_score": (i + 1) as f64 / n as f64}))
            .collect();
        axum::Json(json!({"id": "scripted", "results": results})).into_response()
    }
}

impl RerankReply {
    /// 200 ranking the documents last first.
    pub fn reversed() -> Self {
        Reply::Ok(Reversed)
    }
}

impl Replies for VecDeque<RerankReply> {
    type Payload = Reversed;

    fn next(&mut self, _: &Call) -> RerankReply {
        next_in(self).unwrap_or_else(RerankReply::reversed)
    }
}

impl ScriptedRerank {
    /// Binds `127.0.0.1:0` on the current runtime and serves `replies` until dropped.
    pub async fn start(replies: impl IntoIterator<Item = RerankReply>) -> Self {
        Scripted::serve("/v1/rerank", replies.into_iter().collect()).await
    }

    /// `http://127.0.0.1:PORT/v1`, the value for `RERANK_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr())
    }
}
