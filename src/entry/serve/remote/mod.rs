//! `serve --remote URL`: the playground served locally, every other request sent on to a
//! deployed stack (its HTTP API or a function URL), signed with SigV4 from the caller's AWS
//! credentials. The page talks to this server only, so the credentials never reach the browser.
//! Responses come back as they arrive (a run's server-sent events included); a refused
//! signature (401/403) or a stack that cannot be reached becomes one JSON error of this
//! server's own, `remote_refused` or `remote_unreachable`, which the page shows as it is.
//! Nothing is retried here: the page (or the person) decides whether to ask again.
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | forwarding one request |
//! | `error.rs` | why a request did not reach the stack, and what the page is told |
//! | `target.rs` | the stack's URL, and the service and region it is signed for |
//! | `sign.rs` | the credentials of the default chain, and SigV4 |

mod error;
mod sign;
mod target;

pub(crate) use target::{SigningService, Target, TargetError};

use super::body::{full, BoxError, ServeBody};
use super::request;
use crate::outbound::Transport;
use error::RemoteError;
use futures::TryStreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use lambda_http::http::{header, HeaderName, Response, StatusCode};
use sign::Signer;
use std::time::Duration;

/// The request headers sent on (and signed): what the API reads. The browser's others (its
/// cookies, origin, user agent) are no business of the stack's.
const FORWARDED: [&str; 4] = ["accept", "content-type", "idempotency-key", "last-event-id"];

/// Response headers not passed back: the connection's own, and the length, which the
/// re-streamed body sets again.
const HOP_BY_HOP: [HeaderName; 5] = [
    header::CONNECTION,
    header::TRANSFER_ENCODING,
    header::CONTENT_LENGTH,
    header::UPGRADE,
    header::TRAILER,
];

/// How long connecting to the stack may take (no limit on a response: a run's events stream
/// for as long as it runs).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why `serve --remote` cannot start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    /// The URL, service or region as given cannot be used.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The default chain has no credentials.
    #[error(
        "no AWS credentials to sign requests to {url} with ({reason}); set AWS_PROFILE, or \
         AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or sign in with `aws sso login`"
    )]
    NoCredentials { url: String, reason: String },
}

/// A deployed stack and what signs requests to it.
pub(crate) struct Remote {
    target: Target,
    signer: Signer,
    client: reqwest::Client,
}

impl Remote {
    /// The stack at `url`, signed for with the default chain's credentials (asked for once
    /// here, so missing ones stop `serve` before it listens).
    pub(crate) async fn from_env(
        url: &str,
        service: Option<SigningService>,
        region: Option<String>,
    ) -> Result<Remote, StartError> {
        let sdk = crate::tls::aws_sdk_config().await;
        let config_region = sdk.region().map(|r| r.as_ref().to_owned());
        let target = Target::new(url, service, region, config_region.as_deref())?;
        let no_credentials = |reason: String| StartError::NoCredentials {
            url: target.url().to_owned(),
            reason,
        };
        let provider = sdk
            .credentials_provider()
            .ok_or_else(|| no_credentials("no credential provider is configured".into()))?;
        let signer = Signer::new(provider);
        if let Err(e) = signer.credentials().await {
            return Err(no_credentials(e.to_string()));
        }
        let client = crate::tls::reqwest_builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| no_credentials(e.to_string()))?;
        Ok(Remote {
            target,
            signer,
            client,
        })
    }

    pub(crate) fn target(&self) -> &Target {
        &self.target
    }

    /// Sends `request` on to the stack and gives its answer, streamed, or this server's error.
    pub(super) async fn forward(&self, request: hyper::Request<Incoming>) -> Response<ServeBody> {
        let (parts, body) = request.into_parts();
        let body = match request::body_of(body).await {
            Ok(body) => body,
            Err(unread) => return unread.response().map(full),
        };
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        match self.send(&parts.method, path, &parts.headers, body).await {
            Ok(response) => response,
            Err(e) => {
                // The error names the stack and the reason, never a credential or signature.
                tracing::warn!(method = %parts.method, path = parts.uri.path(), error = %e, "remote request failed");
                e.response(&self.target).map(full)
            }
        }
    }

    async fn send(
        &self,
        method: &lambda_http::http::Method,
        path: &str,
        headers: &lambda_http::http::HeaderMap,
        body: hyper::body::Bytes,
    ) -> Result<Response<ServeBody>, RemoteError> {
        let url = self.target.url_of(path);
        let forwarded: Vec<(&str, &str)> = FORWARDED
            .iter()
            .filter_map(|name| Some((*name, headers.get(*name)?.to_str().ok()?)))
            .collect();
        let signed = self
            .signer
            .sign(&self.target, method.as_str(), &url, &forwarded, &body)
            .await?;
        let mut outbound = self.client.request(method.clone(), &url).body(body);
        for (name, value) in &forwarded {
            outbound = outbound.header(*name, *value);
        }
        for (name, value) in &signed {
            outbound = outbound.header(name, value);
        }
        let response = outbound.send().await.map_err(|e| {
            RemoteError::Unreachable(match Transport::of(e) {
                Transport::Timeout => format!("no connection within {CONNECT_TIMEOUT:?}"),
                Transport::Connect(reason)
                | Transport::Build(reason)
                | Transport::Broken(reason) => reason,
            })
        })?;
        let status = response.status();
        if status == StatusCode::FORBIDDEN || status == StatusCode::UNAUTHORIZED {
            let text = response.text().await.unwrap_or_default();
            return Err(RemoteError::Refused {
                status: status.as_u16(),
                message: refusal_message(&text),
            });
        }
        let mut answer = Response::builder().status(status);
        for (name, value) in response.headers() {
            if !HOP_BY_HOP.contains(name) {
                answer = answer.header(name, value);
            }
        }
        let body = StreamBody::new(
            response
                .bytes_stream()
                .map_ok(Frame::data)
                .map_err(BoxError::from),
        );
        answer
            .body(body.boxed_unsync())
            .map_err(|e| RemoteError::Unreachable(e.to_string()))
    }
}

/// The first line of a refusal's `message` (API Gateway) or `Message` (function URLs), at most
/// 200 characters. Only the first: API Gateway's signature mismatch goes on with the canonical
/// request it expected, which holds the signed headers' values (a session token among them).
fn refusal_message(body: &str) -> String {
    let json: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = json
        .as_ref()
        .and_then(|j| j.get("message").or_else(|| j.get("Message")))
        .and_then(|m| m.as_str())
        .unwrap_or("Forbidden");
    let first = message.lines().next().unwrap_or_default().trim();
    match first.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &first[..at]),
        None if first.is_empty() => "Forbidden".to_owned(),
        None => first.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_named_by_its_first_line_only() {
        let mismatch = r#"{"message":"The request signature we calculated does not match the signature you provided.\n\nThe Canonical String for this request should have been\n'POST\n/workflow/run\n\nx-amz-security-token:SECRET-TOKEN'"}"#;
        assert_eq!(
            refusal_message(mismatch),
            "The request signature we calculated does not match the signature you provided."
        );
        assert_eq!(refusal_message(r#"{"Message":"Forbidden"}"#), "Forbidden");
        assert_eq!(refusal_message("<html>"), "Forbidden");
        assert_eq!(
            refusal_message(&format!(r#"{{"message":"{}"}}"#, "x".repeat(300))).len(),
            203
        );
    }
}
