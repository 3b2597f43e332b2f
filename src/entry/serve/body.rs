//! The body of every answer of `serve`: a handler's (streamed) body, the page, this server's
//! own errors, or a remote stack's answer as it arrives.

use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;

/// A response body.
pub(super) type ServeBody = UnsyncBoxBody<Bytes, BoxError>;

/// The error of a streamed body.
pub(super) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A body of `bytes`, whole.
pub(super) fn full(bytes: Bytes) -> ServeBody {
    Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}
