//! Why a web search failed, classified once by HTTP semantics: timeouts, connection failures,
//! 408, 429 and 5xx are transient (with the server's `Retry-After` when given); any other 4xx,
//! a malformed response and a misconfigured client are permanent.
use crate::outbound::call_error_impls;
use std::time::Duration;

/// A failed web search.
#[derive(Debug, thiserror::Error)]
pub enum WebSearchError {
    /// The web search did not answer within the per-call timeout.
    #[error("web search timed out after {} ms", after.as_millis())]
    Timeout {
        /// The timeout that expired.
        after: Duration,
    },
    /// The web search could not be reached, or the connection broke.
    #[error("web search connection failed: {0}")]
    Connect(String),
    /// The web search answered with an HTTP error status.
    #[error("web search returned HTTP {status}: {message}")]
    Http {
        /// HTTP status code.
        status: u16,
        /// Short excerpt of the body (secrets scrubbed).
        message: String,
        /// The server's `Retry-After`, if any.
        retry_after: Option<Duration>,
    },
    /// The web search answered 2xx with a body that is not the expected JSON.
    #[error("web search returned an invalid response: {0}")]
    InvalidResponse(String),
    /// The web search client is misconfigured (bad base URL, client build failure).
    #[error("web search is misconfigured: {0}")]
    Config(String),
}

call_error_impls!(WebSearchError);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Classify, ErrorClass};

    fn http(status: u16, retry_after: Option<Duration>) -> WebSearchError {
        WebSearchError::Http {
            status,
            message: String::new(),
            retry_after,
        }
    }

    #[test]
    fn http_statuses_are_classified_by_retryability() {
        for status in [408, 429, 500, 502, 503, 504] {
            assert!(http(status, None).is_transient(), "{status}");
        }
        for status in [400, 401, 403, 404, 422] {
            assert_eq!(
                http(status, None).class(),
                ErrorClass::Permanent,
                "{status}"
            );
        }
    }

    #[test]
    fn retry_after_is_reported_only_for_http_errors() {
        let wait = Some(Duration::from_secs(7));
        assert_eq!(http(429, wait).retry_after(), wait);
        let timeout = WebSearchError::Timeout {
            after: Duration::from_secs(1),
        };
        assert!(timeout.is_transient());
        assert_eq!(timeout.retry_after(), None);
        assert!(!WebSearchError::Connect("refused".into())
            .to_string()
            .is_empty());
        assert_eq!(
            WebSearchError::InvalidResponse("x".into()).class(),
            ErrorClass::Permanent
        );
    }
}
