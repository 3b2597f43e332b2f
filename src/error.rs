//! Error classification shared by every layer.
//!
//! Each layer has its own `thiserror` enum; all of them implement [`Classify`], so the
//! engine decides *once*, where the error happens, whether it is worth retrying.

use std::time::Duration;

/// Whether retrying the same operation can succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// Timeouts, connection errors, 5xx, throttling, 429: retried with backoff inside the budget.
    Transient,
    /// Bad requests, auth, validation, malformed output after its bounded re-ask: never retried.
    Permanent,
}

/// Implemented by every layer's error type.
pub trait Classify {
    /// Transient or permanent.
    fn class(&self) -> ErrorClass;

    /// A server-provided minimum wait (HTTP `Retry-After`), if any.
    fn retry_after(&self) -> Option<Duration> {
        None
    }

    /// Shorthand for `class() == Transient`.
    fn is_transient(&self) -> bool {
        self.class() == ErrorClass::Transient
    }
}

/// A span's `outcome` attribute: `ok`, `transient_error` or `permanent_error`.
pub(crate) fn outcome<T, E: Classify>(result: &Result<T, E>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(e) if e.is_transient() => "transient_error",
        Err(_) => "permanent_error",
    }
}
