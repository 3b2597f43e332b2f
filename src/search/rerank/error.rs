//! Errors of a rerank call, classified once: timeouts, connection failures, 408, 429 and 5xx
//! are transient (with the server's `Retry-After`); any other status, a malformed answer and a
//! misconfiguration are permanent.
//! `Classify` and `From<CallFailure>` are the shared `call_error_impls!`.
use crate::outbound::call_error_impls;
use std::time::Duration;

/// A failed rerank call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RerankError {
    /// No answer within the call's timeout.
    #[error("rerank call timed out after {} ms", after.as_millis())]
    Timeout {
        /// The timeout that expired.
        after: Duration,
    },
    /// The server could not be reached, or the connection broke.
    #[error("rerank connection failed: {0}")]
    Connect(String),
    /// An HTTP error status.
    #[error("rerank server returned HTTP {status}: {message}")]
    Http {
        /// HTTP status code.
        status: u16,
        /// Short excerpt of the body (key scrubbed).
        message: String,
        /// The server's `Retry-After`, if any.
        retry_after: Option<Duration>,
    },
    /// A 2xx answer that is not the expected JSON, or results that do not fit the inputs.
    #[error("rerank server returned an invalid response: {0}")]
    InvalidResponse(String),
    /// Bad base URL or client build failure.
    #[error("rerank client is misconfigured: {0}")]
    Config(String),
}

call_error_impls!(RerankError);
