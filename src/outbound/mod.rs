//! HTTP plumbing shared by every remote client (the OpenAI-compatible model, web search,
//! embeddings): which statuses are worth retrying, `Retry-After`, what a `reqwest` failure
//! was, an error and its causes on one line, and keeping a key out of error text.
//!
//! The classification happens once, here; each layer maps a [`Transport`] or a status to its
//! own `thiserror` variant (and message) and never classifies `reqwest` errors itself.
//! [`json_endpoint`] is the one JSON POST the web search, embeddings and rerank clients share.

pub(crate) mod json_endpoint;

pub(crate) use json_endpoint::{call_error_impls, CallFailure, JsonEndpoint};

use crate::secrets::Secret;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use std::time::{Duration, SystemTime};

/// The `User-Agent` every client sends.
pub(crate) const USER_AGENT: &str = concat!("bounded-rag/", env!("CARGO_PKG_VERSION"));

/// 408 (request timeout), 429 (rate limited) and every 5xx are worth retrying.
pub(crate) fn status_is_transient(status: u16) -> bool {
    matches!(status, 408 | 429 | 500..=599)
}

/// `Retry-After` from `headers`, if present and well-formed ([`parse_retry_after`]).
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    parse_retry_after(headers.get(RETRY_AFTER)?.to_str().ok()?, now)
}

/// Parses a `Retry-After` value: delay seconds, or an HTTP-date (a date in the past means
/// "now"). `now` is injected so tests need no clock.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// An error and its sources on one line (`error sending request: ...: Connection refused`);
/// a cause already contained in the text so far is not repeated.
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// `text` with `key` replaced by `[redacted]`, for text a server or the network stack sent
/// back (a server may echo the `Authorization` header). An empty key removes nothing.
pub(crate) fn scrub(text: &str, key: Option<&Secret>) -> String {
    match key {
        Some(key) if !key.expose().is_empty() => text.replace(key.expose(), "[redacted]"),
        _ => text.to_owned(),
    }
}

/// What a failed `reqwest` call was. The texts are the error chain without the URL (and not
/// yet scrubbed: the caller knows the key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Transport {
    /// The call's time limit passed (transient).
    Timeout,
    /// The server could not be reached: refused, DNS, TLS handshake (transient).
    Connect(String),
    /// The request could not be built as configured (permanent).
    Build(String),
    /// The connection broke while sending the request or reading the reply (transient).
    Broken(String),
}

impl Transport {
    /// Classifies `err`: a timeout first (a connect timeout is a timeout), then connect,
    /// build and everything else.
    pub(crate) fn of(err: reqwest::Error) -> Self {
        let err = err.without_url();
        if err.is_timeout() {
            Self::Timeout
        } else if err.is_connect() {
            Self::Connect(error_chain(&err))
        } else if err.is_builder() {
            Self::Build(error_chain(&err))
        } else {
            Self::Broken(error_chain(&err))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retryable_statuses() {
        for code in [408, 429, 500, 502, 503, 504, 599] {
            assert!(status_is_transient(code), "{code}");
        }
        for code in [200, 400, 401, 403, 404, 422, 600] {
            assert!(!status_is_transient(code), "{code}");
        }
    }

    #[test]
    fn retry_after_parses_seconds_and_http_dates() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(parse_retry_after(" 2 ", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[test]
    fn retry_after_accepts_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers, now), None);
        headers.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(7)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        headers.insert(RETRY_AFTER, HeaderValue::from_str(&later).unwrap());
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(30)));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&headers, now), None);
    }

    #[test]
    fn the_key_is_scrubbed_and_an_empty_key_removes_nothing() {
        let key = Secret::new("tvly-SECRET");
        assert_eq!(
            scrub("bad key tvly-SECRET", Some(&key)),
            "bad key [redacted]"
        );
        assert_eq!(scrub("text", Some(&Secret::new(""))), "text");
        assert_eq!(scrub("text", None), "text");
    }

    #[test]
    fn the_chain_joins_causes_once() {
        #[derive(Debug)]
        struct E(&'static str, Option<Box<E>>);
        impl std::fmt::Display for E {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0)
            }
        }
        impl std::error::Error for E {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                self.1.as_deref().map(|e| e as _)
            }
        }
        let inner = E("connection refused", None);
        let err = E("error sending request", Some(Box::new(inner)));
        assert_eq!(
            error_chain(&err),
            "error sending request: connection refused"
        );
        let repeated = E("refused: x", Some(Box::new(E("x", None))));
        assert_eq!(error_chain(&repeated), "refused: x");
    }
}
