//! The JSON-over-HTTP call the knowledge rooms' remote clients share (web search, embeddings,
//! rerank): one POST with an optional bearer key within the caller's timeout, the status,
//! `Retry-After` and the body read once, and what a failed call says ([`CallFailure`]: host
//! named, key scrubbed). Each client maps a [`CallFailure`] to its own error type.

use crate::clock::{Clock, SystemClock};
use crate::outbound::{error_chain, retry_after, status_is_transient, Transport, USER_AGENT};
use crate::secrets::Secret;
use serde::Serialize;
use std::sync::Arc;
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

/// One JSON endpoint of a remote service: the URL, the client built once for it (clones share
/// the connection pool), the optional bearer key and the clock read for `Retry-After`.
#[derive(Debug, Clone)]
pub(crate) struct JsonEndpoint {
    http: reqwest::Client,
    url: reqwest::Url,
    api_key: Option<Secret>,
    /// Reads "now" for an HTTP-date `Retry-After`.
    clock: Arc<dyn Clock>,
}

/// Why a call to a [`JsonEndpoint`] failed, before the client names it in its own error type.
pub(crate) enum CallFailure {
    /// No answer within the call's timeout.
    Timeout {
        /// The timeout that expired.
        after: Duration,
    },
    /// Connect, send and body-read failures: the network, worth another attempt. The message
    /// names the host and is scrubbed of the key.
    Connect(String),
    /// The request could not be built (scrubbed of the key).
    Config(String),
    /// A non-2xx reply.
    Http(Failure),
}

impl JsonEndpoint {
    /// `{base_url}/{path}` (see [`client_for`]), with the system clock; the error is the
    /// message of the caller's configuration error.
    pub(crate) fn new(base_url: &str, path: &str, api_key: Option<Secret>) -> Result<Self, String> {
        let (url, http) = client_for(base_url, path)?;
        Ok(Self {
            http,
            url,
            api_key,
            clock: Arc::new(SystemClock),
        })
    }

    /// The URL requests are posted to.
    pub(crate) fn url(&self) -> &str {
        self.url.as_str()
    }

    /// POSTs `body` within `timeout`; the body text of a 2xx reply, or why the call failed.
    pub(crate) async fn post(
        &self,
        body: &impl Serialize,
        timeout: Duration,
    ) -> Result<String, CallFailure> {
        let reply = post_json(
            &self.http,
            &self.url,
            body,
            self.api_key.as_ref(),
            timeout,
            self.clock.as_ref(),
        )
        .await
        .map_err(|e| self.transport_failure(e, timeout))?;
        match reply.failure(|text| self.scrub(text)) {
            Some(failure) => Err(CallFailure::Http(failure)),
            None => Ok(reply.text),
        }
    }

    fn transport_failure(&self, err: reqwest::Error, timeout: Duration) -> CallFailure {
        match Transport::of(err) {
            Transport::Timeout => CallFailure::Timeout { after: timeout },
            Transport::Build(chain) => CallFailure::Config(self.scrub(&chain)),
            Transport::Connect(chain) | Transport::Broken(chain) => {
                let host = self.url.host_str().unwrap_or("?");
                CallFailure::Connect(self.scrub(&format!("{host}: {chain}")))
            }
        }
    }

    /// Removes the key from text a server sent back, in case it echoes the header.
    pub(crate) fn scrub(&self, text: &str) -> String {
        crate::outbound::scrub(text, self.api_key.as_ref())
    }
}

/// `{base_url}/{path}`, checked to be http(s), and the client built once for it. The error is
/// the message of the caller's configuration error.
fn client_for(base_url: &str, path: &str) -> Result<(reqwest::Url, reqwest::Client), String> {
    let base = base_url.trim().trim_end_matches('/');
    let endpoint = reqwest::Url::parse(&format!("{base}/{path}"))
        .map_err(|e| format!("base URL `{base}`: {e}"))?;
    if !matches!(endpoint.scheme(), "http" | "https") {
        return Err(format!("base URL `{base}` must be http or https"));
    }
    let http = crate::tls::reqwest_builder()
        .user_agent(USER_AGENT)
        .build()
        .map_err(|e| error_chain(&e))?;
    Ok((endpoint, http))
}

/// POSTs `body` as JSON to `endpoint`, with `Authorization: Bearer` when a key is given;
/// `clock` is "now" for an HTTP-date `Retry-After`.
async fn post_json(
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

/// For a client's error enum with the variants `Timeout { after }`, `Connect(String)`,
/// `Http { status, message, retry_after }` and `Config(String)`: `From<CallFailure>`
/// (`call_error_impls!(From for E)`). With `InvalidResponse(String)` and no other variant,
/// `call_error_impls!(E)` adds `Classify`, once for all such enums: timeouts, connection
/// failures and 408, 429 and 5xx are transient (with the server's `Retry-After`); any other
/// status, a malformed answer and a misconfiguration are permanent.
macro_rules! call_error_impls {
    (From for $error:ty) => {
        impl From<$crate::outbound::json_endpoint::CallFailure> for $error {
            fn from(failure: $crate::outbound::json_endpoint::CallFailure) -> Self {
                use $crate::outbound::json_endpoint::CallFailure;
                match failure {
                    CallFailure::Timeout { after } => Self::Timeout { after },
                    CallFailure::Connect(message) => Self::Connect(message),
                    CallFailure::Config(message) => Self::Config(message),
                    CallFailure::Http(f) => Self::Http {
                        status: f.status,
                        message: f.message,
                        retry_after: f.retry_after,
                    },
                }
            }
        }
    };
    ($error:ty) => {
        $crate::outbound::json_endpoint::call_error_impls!(From for $error);

        impl $crate::error::Classify for $error {
            fn class(&self) -> $crate::error::ErrorClass {
                use $crate::error::ErrorClass;
                match self {
                    Self::Timeout { .. } | Self::Connect(_) => ErrorClass::Transient,
                    Self::Http { status, .. } if $crate::outbound::status_is_transient(*status) => {
                        ErrorClass::Transient
                    }
                    Self::Http { .. } | Self::InvalidResponse(_) | Self::Config(_) => {
                        ErrorClass::Permanent
                    }
                }
            }

            fn retry_after(&self) -> Option<std::time::Duration> {
                match self {
                    Self::Http { retry_after, .. } => *retry_after,
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use call_error_impls;

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
