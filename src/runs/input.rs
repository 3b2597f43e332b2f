//! A run request as an entry point read it: the request (or why it could not be read), the
//! `Idempotency-Key` (if any) and the raw body the key is bound to. Reading is the entry
//! point's (HTTP body and headers, CLI arguments); deciding is the run life cycle's, in a fixed
//! order: the rate window first, then the request, then the key.

use super::refusal::Invalid;
use crate::rag::RunRequest;

/// A run request as read by an entry point.
#[derive(Debug)]
pub(crate) struct RunInput<'a> {
    /// The validated request, or why it is not one.
    pub(crate) request: Result<RunRequest, Invalid>,
    /// The caller's `Idempotency-Key` (`None`: none given), or why it is malformed.
    pub(crate) key: Result<Option<&'a str>, Invalid>,
    /// The raw body a key is bound to (a repeated key with another body is refused).
    pub(crate) body: &'a [u8],
}

impl RunInput<'_> {
    /// A request read without a key (the CLI).
    pub(crate) fn request(request: RunRequest) -> Self {
        Self {
            request: Ok(request),
            key: Ok(None),
            body: &[],
        }
    }
}
