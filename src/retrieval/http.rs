//! The JSON-over-HTTP call the knowledge base's remote clients share (web search, embeddings):
//! one POST with an optional bearer key within the caller's timeout, the status, `Retry-After`
//! and the body read once, and what a failed reply says. Each client maps a transport error
//! ([`crate::http::Transport`]) and a failure to its own error type.

use crate::clock::Clock;
use crate::http::{error_chain, retry_after, status_is_transient, USER_AGENT};
use crate::secrets::Secret;
use serde::Serialize;
use std::time::Duration;

/// Longest excerpt of an error body kept in an error message.
const ERROR_BODY_CHARS: usize = 200;

/// A reply, read.
pub(crate) struct Reply {
    /// HTTP status.
    pub status: reqwest::StatusCode,
    /// `Retry-After`, if the server sent one.
    pub retry_after: Option<Duration>,
    /// The body.
    pub text: String,
}

/// What a non-2xx reply says.
pub(crate) struct Failure {
    /// HTTP status.
    pub status: u16,
    /// The start of the body (scrubbed of the key), or the status reason when it is empty.
    pub message: String,
    /// `Retry-After`, kept only for a transient status.
    pub retry_after: Option<Duration>,
}

/// `{base_url}/{path}`, checked to be http(s), and the client built once for it. The error is
/// the message of the caller's configuration error.
pub(crate) fn client_for(
    base_url: &str,
    path: &str,
) -> Result<(reqwest::Url, reqwest::Client), String> {
    let base = base_url.trim().trim_end_matches('/');
    let endpoint = reqwest::Url::parse(&format!("{base}/{path}"))
        .map_err(|e| format!("base URL `{base}`: {e}"))?;
    if !matches!(endpoint.scheme(), "http" | "https") {
        return Err(format!("base URL `{base}` must be http or https"));
    }
    let http = reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .build()
        .map_err(|e| error_chain(&e))?;
    Ok((endpoint, http))
}

/// POSTs `body` as JSON to `endpoint`, with `Authorization: Bearer` when a key is given;
/// `clock` is "now" for an HTTP-date `Retry-After`.
pub(crate) async fn post_json(
    http: &reqwest::Client,
    endpoint: &reqwest::Url,
    body: &impl Serialize,
    key: Option<&Secret>,
    timeout: Duration,
    clock: &dyn Clock,
) -> Result<Reply, reqwest::Error> {
    let mut request = http.post(endpoint.clone()).json(body).timeout(timeout);
    if let Some(key) = key {
        request = request.bearer_auth(key.expose());
    }
    let response = request.send().await?;
    let status = response.status();
    let retry_after = retry_after(response.headers(), clock.now());
    let text = response.text().await?;
    Ok(Reply {
        status,
        retry_after,
        text,
    })
}

impl Reply {
    /// `None` for a 2xx reply; otherwise what it says, with `scrub` applied to the body.
    pub(crate) fn failure(&self, scrub: impl Fn(&str) -> String) -> Option<Failure> {
        if self.status.is_success() {
            return None;
        }
        let excerpt: String = self.text.trim().chars().take(ERROR_BODY_CHARS).collect();
        let message = match self.status.canonical_reason() {
            Some(reason) if excerpt.is_empty() => reason.to_owned(),
            _ => scrub(&excerpt),
        };
        let status = self.status.as_u16();
        Some(Failure {
            status,
            message,
            retry_after: self.retry_after.filter(|_| status_is_transient(status)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u16, text: &str, retry: Option<u64>) -> Reply {
        Reply {
            status: reqwest::StatusCode::from_u16(status).unwrap(),
            retry_after: retry.map(Duration::from_secs),
            text: text.to_owned(),
        }
    }

    #[test]
    fn failures_keep_retry_after_only_when_transient_and_scrub_the_body() {
        assert!(reply(200, "{}", None).failure(str::to_owned).is_none());
        let f = reply(503, "  busy sk-123  ", Some(2))
            .failure(|t| t.replace("sk-123", "[redacted]"))
            .unwrap();
        assert_eq!((f.status, f.message.as_str()), (503, "busy [redacted]"));
        assert_eq!(f.retry_after, Some(Duration::from_secs(2)));
        let f = reply(400, "", Some(2)).failure(str::to_owned).unwrap();
        assert_eq!((f.message.as_str(), f.retry_after), ("Bad Request", None));
        let long = "x".repeat(500);
        let f = reply(500, &long, None).failure(str::to_owned).unwrap();
        assert_eq!(f.message.chars().count(), ERROR_BODY_CHARS);
    }
}
