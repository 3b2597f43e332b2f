//! Errors of model calls, classified once, where they happen.
//!
//! Transport failures (timeouts, connection errors, 5xx, 408, 429) are transient and left to
//! the engine's retry policy; everything the same request would hit again (other 4xx, auth,
//! malformed output after the bounded re-ask, bad configuration) is permanent.
//!
//! No variant ever carries an API key: providers build messages from redacted text only.

use crate::error::{Classify, ErrorClass};
use crate::outbound::status_is_transient;
use std::time::Duration;

/// Longest body excerpt kept in an [`LlmError::Status`] or [`LlmError::Malformed`].
pub(crate) const EXCERPT_CHARS: usize = 200;

/// A failed model call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// The call did not finish within its time limit.
    #[error("model call timed out after {}ms", after.as_millis())]
    Timeout {
        /// The limit that was exceeded.
        after: Duration,
    },
    /// The server could not be reached (refused, reset, DNS, TLS handshake).
    #[error("cannot reach the model server: {0}")]
    Connect(String),
    /// The connection broke while sending the request or reading the reply.
    #[error("model call failed in transit: {0}")]
    Transport(String),
    /// The server answered with a non-success HTTP status.
    #[error("model server returned HTTP {status}: {body}")]
    Status {
        /// HTTP status code.
        status: u16,
        /// The start of the response body, for diagnosis.
        body: String,
        /// The server's `Retry-After`, if it sent one.
        retry_after: Option<Duration>,
    },
    /// The server answered 2xx but not with a chat-completions reply (wrong base URL, no
    /// choices, no message content, a refusal).
    #[error("model server sent an unusable reply: {0}")]
    InvalidResponse(String),
    /// The reply content was not valid JSON for the task's schema, even after the re-ask.
    #[error("model reply is not valid JSON for schema {schema} after {attempts} attempts: {error} (reply starts: {excerpt:?})")]
    Malformed {
        /// The task's schema name.
        schema: &'static str,
        /// Model calls made, the re-ask included.
        attempts: u32,
        /// The last parse error.
        error: String,
        /// The start of the last reply.
        excerpt: String,
    },
    /// The prompt and the output cap do not fit the model's context window (OpenAI
    /// `context_length_exceeded`, llama.cpp `exceed_context_size_error`, Bedrock "Input is too
    /// long"). Permanent for the same prompt: the workflow retries it once with a smaller one.
    #[error("the prompt does not fit the model's context window: {0}")]
    ContextOverflow(String),
    /// The client cannot be built or the request cannot be sent as configured.
    #[error("invalid model configuration: {0}")]
    Config(String),
}

/// What servers say when a prompt is over the context window, lower-cased: OpenAI's error
/// code, llama.cpp's error type and message, Bedrock's `ValidationException` messages, and
/// the wording vLLM and Ollama use.
const OVERFLOW_MARKERS: [&str; 7] = [
    "context_length_exceeded",
    "exceed_context_size_error",
    "exceeds the available context size",
    "maximum context length",
    "input is too long",
    "too many input tokens",
    "prompt is too long",
];

/// True when an error text says the prompt is over the model's context window.
pub(crate) fn is_context_overflow(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    OVERFLOW_MARKERS.iter().any(|marker| text.contains(marker))
}

impl LlmError {
    /// The HTTP status, for [`LlmError::Status`].
    pub fn status(&self) -> Option<u16> {
        match self {
            LlmError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// True for 401 / 403: the key is missing, wrong or not allowed to use the model.
    pub fn is_auth(&self) -> bool {
        matches!(self.status(), Some(401 | 403))
    }
}

impl Classify for LlmError {
    fn class(&self) -> ErrorClass {
        match self {
            LlmError::Timeout { .. } | LlmError::Connect(_) | LlmError::Transport(_) => {
                ErrorClass::Transient
            }
            LlmError::Status { status, .. } if status_is_transient(*status) => {
                ErrorClass::Transient
            }
            LlmError::Status { .. }
            | LlmError::InvalidResponse(_)
            | LlmError::Malformed { .. }
            | LlmError::ContextOverflow(_)
            | LlmError::Config(_) => ErrorClass::Permanent,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Status {
                status,
                retry_after,
                ..
            } if status_is_transient(*status) => *retry_after,
            _ => None,
        }
    }
}

/// The first [`EXCERPT_CHARS`] characters of `text`, trimmed, on a char boundary.
pub(crate) fn excerpt(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16, retry_after: Option<u64>) -> LlmError {
        LlmError::Status {
            status,
            body: String::new(),
            retry_after: retry_after.map(Duration::from_secs),
        }
    }

    #[test]
    fn transport_failures_and_retryable_statuses_are_transient() {
        assert!(LlmError::Timeout {
            after: Duration::from_secs(1)
        }
        .is_transient());
        assert!(LlmError::Connect("refused".into()).is_transient());
        assert!(LlmError::Transport("reset".into()).is_transient());
        for code in [408, 429, 500, 502, 503, 504] {
            assert!(status(code, None).is_transient(), "{code}");
        }
    }

    #[test]
    fn client_errors_malformed_and_config_are_permanent() {
        for code in [400, 401, 403, 404, 422] {
            assert_eq!(
                status(code, Some(3)).class(),
                ErrorClass::Permanent,
                "{code}"
            );
            assert_eq!(status(code, Some(3)).retry_after(), None);
        }
        let malformed = LlmError::Malformed {
            schema: "grade_documents",
            attempts: 2,
            error: "expected value".into(),
            excerpt: "maybe".into(),
        };
        assert_eq!(malformed.class(), ErrorClass::Permanent);
        assert_eq!(LlmError::Config("x".into()).class(), ErrorClass::Permanent);
        assert!(status(401, None).is_auth());
    }

    #[test]
    fn overflow_answers_of_each_server_are_recognised() {
        for text in [
            r#"{"error":{"code":"context_length_exceeded","message":"This model's maximum context length is 8192 tokens."}}"#,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":2146,"n_ctx":2048}}"#,
            "ValidationException: Input is too long for requested model.",
            "ValidationException: The model returned the following errors: prompt is too long: 210000 tokens > 200000 maximum",
        ] {
            assert!(is_context_overflow(text), "{text}");
        }
        assert!(!is_context_overflow(
            r#"{"error":{"message":"Invalid API key"}}"#
        ));
        assert_eq!(
            LlmError::ContextOverflow("x".into()).class(),
            ErrorClass::Permanent
        );
    }

    #[test]
    fn retry_after_is_reported_for_transient_statuses() {
        assert_eq!(
            status(429, Some(2)).retry_after(),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            status(503, Some(7)).retry_after(),
            Some(Duration::from_secs(7))
        );
        assert_eq!(status(500, None).retry_after(), None);
    }

    #[test]
    fn excerpt_is_bounded_and_char_safe() {
        let long = "é".repeat(EXCERPT_CHARS + 50);
        let cut = excerpt(&long);
        assert_eq!(cut.chars().count(), EXCERPT_CHARS + 3);
        assert_eq!(excerpt("  short \n"), "short");
    }
}
