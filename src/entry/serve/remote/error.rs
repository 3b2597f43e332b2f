//! Why a request did not reach the deployed stack, or was refused by it, classified once, and
//! the one JSON error of this server's own the page is told (`{error, message}`), naming the
//! stack and what to check.

use super::target::Target;
use crate::entry::serve::request::error_response;
use crate::error::{Classify, ErrorClass};
use lambda_http::http::{Response, StatusCode};

/// Why one request did not reach the stack, or was refused by it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RemoteError {
    /// The credential chain failed (expired SSO session, unreachable instance metadata...).
    #[error("no AWS credentials to sign with: {0}")]
    Credentials(String),
    /// The request could not be signed.
    #[error("the request could not be signed: {0}")]
    Signing(String),
    /// Connecting failed, or the connection broke before the response's head.
    #[error("{0}")]
    Unreachable(String),
    /// The stack answered 401 or 403: the signature, or the identity behind it, was refused.
    #[error("HTTP {status}: {message}")]
    Refused { status: u16, message: String },
}

impl Classify for RemoteError {
    fn class(&self) -> ErrorClass {
        match self {
            RemoteError::Unreachable(_) => ErrorClass::Transient,
            RemoteError::Credentials(_) | RemoteError::Signing(_) | RemoteError::Refused { .. } => {
                ErrorClass::Permanent
            }
        }
    }
}

impl RemoteError {
    /// This server's answer to the page: status, `error` code and a message naming the stack.
    pub(super) fn response(&self, target: &Target) -> Response<hyper::body::Bytes> {
        let (url, service, region) = (target.url(), target.service().as_str(), target.region());
        let (status, code, message) = match self {
            RemoteError::Refused { status, message } => (
                StatusCode::FORBIDDEN,
                "remote_refused",
                format!(
                    "The deployed stack at {url} refused the signed request (HTTP {status}: \
                     {message}). Check the AWS credentials `bounded-rag serve --remote` signs \
                     with (AWS_PROFILE, their expiry, their permission to invoke the stack) and \
                     the signing service and region ({service}, {region})."
                ),
            ),
            RemoteError::Unreachable(reason) => (
                StatusCode::BAD_GATEWAY,
                "remote_unreachable",
                format!("Cannot reach the deployed stack at {url}: {reason}."),
            ),
            RemoteError::Credentials(_) | RemoteError::Signing(_) => (
                StatusCode::BAD_GATEWAY,
                "remote_credentials",
                format!("Requests to the deployed stack at {url} cannot be signed: {self}."),
            ),
        };
        error_response(status, code, &message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_answers_403_naming_the_stack_and_what_to_check() {
        let target =
            Target::new("https://abc.lambda-url.eu-west-1.on.aws", None, None, None).unwrap();
        let refused = RemoteError::Refused {
            status: 403,
            message: "Forbidden".into(),
        };
        assert!(!refused.is_transient());
        let response = refused.response(&target);
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        let body: serde_json::Value = serde_json::from_slice(response.body()).unwrap();
        assert_eq!(body["error"], "remote_refused");
        assert!(body["message"]
            .as_str()
            .unwrap()
            .starts_with("The deployed stack at https://abc.lambda-url.eu-west-1.on.aws refused the signed request (HTTP 403: Forbidden)."));
        let unreachable = RemoteError::Unreachable("Connection refused".into());
        assert!(unreachable.is_transient());
        assert_eq!(
            unreachable.response(&target).status(),
            StatusCode::BAD_GATEWAY
        );
    }
}
