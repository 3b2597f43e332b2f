//! A scripted Tavily-compatible web search server on loopback.
//!
//! `POST /search` answers from a queue of [`WebReply`]s, served in order, the last one
//! repeating forever (an empty script answers `{"results": []}`). Every request, including
//! ones to other paths (answered 404), is recorded (a [`WebCall`]: its path, JSON body,
//! `Authorization` header and arrival time), so tests can assert the request shape and exact
//! call counts. The server stops when the [`ScriptedWeb`] is dropped.
//!
//! ```ignore
//! let web = ScriptedWeb::start([WebReply::results([WebResult::new("T", "https://x", "c", 0.9)])]).await;
//! let client = TavilyClient::new(TavilyConfig { base_url: web.base_url(), api_key: None })?;
//! ```
//!
//! Tests that block their thread (for example on a CLI child process) use
//! [`ScriptedWeb::start_in_thread`], which serves from a runtime of its own.

use super::scripted_http::{next_in, Call, Payload, Replies, Reply, Scripted};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::VecDeque;

/// One search result as Tavily returns it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WebResult {
    /// Page title.
    pub title: String,
    /// Page URL.
    pub url: String,
    /// Extracted text.
    pub content: String,
    /// Relevance score.
    pub score: f32,
}

impl WebResult {
    /// A result.
    pub fn new(title: &str, url: &str, content: &str, score: f32) -> Self {
        Self {
            title: title.into(),
            url: url.into(),
            content: content.into(),
            score,
        }
    }
}

/// What the server does with one search request: [`Reply::Ok`] is `{"results": [...]}`.
pub type WebReply = Reply<Vec<WebResult>>;

/// One request the server received.
pub type WebCall = Call;

/// A running scripted web search server; stops on drop.
pub type ScriptedWeb = Scripted<VecDeque<WebReply>>;

impl Payload for Vec<WebResult> {
    fn error_body(status: u16) -> String {
        json!({"detail": {"error": format!("scripted HTTP {status}")}}).to_string()
    }

    fn respond(self, request: &Value, _: usize) -> Response {
        axum::Json(json!({
            "query": request["query"],
            "results": self,
            "response_time": 0.01
        }))
        .into_response()
    }
}

impl WebReply {
    /// 200 with these results.
    pub fn results(results: impl IntoIterator<Item = WebResult>) -> Self {
        Reply::Ok(results.into_iter().collect())
    }
    /// 200 with no results.
    pub fn empty() -> Self {
        Reply::Ok(Vec::new())
    }
    /// `max_results` results that quote the query, from `https://example.com/<n>`.
    pub fn echo() -> Self {
        WebReply::from_fn(|request| {
            let query = request["query"].as_str().unwrap_or_default();
            let n = request["max_results"].as_u64().unwrap_or(1).max(1);
            WebReply::results((1..=n).map(|i| {
                WebResult::new(
                    &format!("Web result {i}"),
                    &format!("https://example.com/{i}"),
                    &format!("A web page about: {query}"),
                    1.0 / i as f32,
                )
            }))
        })
    }
}

impl Replies for VecDeque<WebReply> {
    type Payload = Vec<WebResult>;

    fn next(&mut self, _: &Call) -> WebReply {
        next_in(self).unwrap_or_else(WebReply::empty)
    }
}

impl Call {
    /// `body.query`.
    pub fn query(&self) -> Option<&str> {
        self.body["query"].as_str()
    }
    /// `body.max_results`.
    pub fn max_results(&self) -> Option<u64> {
        self.body["max_results"].as_u64()
    }
}

impl ScriptedWeb {
    /// Binds `127.0.0.1:0` on the current runtime and serves `replies` until dropped.
    pub async fn start(replies: impl IntoIterator<Item = WebReply>) -> Self {
        Scripted::serve("/search", replies.into_iter().collect()).await
    }

    /// Like [`ScriptedWeb::start`], but served by a thread with its own runtime, for tests
    /// that block (a CLI child process, a synchronous test).
    pub fn start_in_thread(replies: impl IntoIterator<Item = WebReply>) -> Self {
        Scripted::serve_in_thread("/search", replies.into_iter().collect())
    }

    /// `http://127.0.0.1:PORT`, the value for `WEB_SEARCH_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr())
    }

    /// Replaces the reply queue while the server runs.
    pub fn script(&self, replies: impl IntoIterator<Item = WebReply>) {
        self.edit_script(|queue| *queue = replies.into_iter().collect());
    }

    /// Number of `POST /search` requests received.
    pub fn calls(&self) -> usize {
        self.recorded()
            .iter()
            .filter(|c| c.path == "/search")
            .count()
    }

    /// Search queries in arrival order.
    pub fn queries(&self) -> Vec<String> {
        self.recorded()
            .iter()
            .filter_map(|c| c.query().map(str::to_owned))
            .collect()
    }
}
