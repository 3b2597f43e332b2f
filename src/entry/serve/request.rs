//! An HTTP request read off a socket, as the Lambda functions get it: the API Gateway HTTP API
//! (payload v2) event a function URL sends, parsed by `lambda_http` itself. So the handlers see
//! exactly what they see on AWS: the path, the query string as `query_string_parameters`, the
//! headers (repeated ones joined with commas), the body, and no authorizer — every request is
//! the anonymous caller, as with a function URL whose auth type is `NONE`.

use base64::Engine;
use http_body_util::{BodyExt, Limited};
use hyper::body::{Bytes, Incoming};
use lambda_http::http::request::Parts;
use lambda_http::http::{Response, StatusCode};
use serde_json::{json, Map, Value};

/// The largest request body read: a function URL's payload limit (6 MB), past which the
/// function is never invoked.
pub(super) const MAX_PAYLOAD_BYTES: usize = 6 * 1024 * 1024;

/// Why a request never reaches a handler.
#[derive(Debug)]
pub(super) enum Unread {
    /// The body is over [`MAX_PAYLOAD_BYTES`].
    TooLarge,
    /// The connection broke while the body was read, or the event would not parse.
    Broken(String),
}

impl Unread {
    /// The answer to a request that was not read.
    pub(super) fn response(&self) -> Response<Bytes> {
        match self {
            Unread::TooLarge => error_response(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "the request body is over 6 MB, a function URL's payload limit",
            ),
            Unread::Broken(reason) => error_response(
                StatusCode::BAD_REQUEST,
                "bad_request",
                &format!("the request could not be read: {reason}"),
            ),
        }
    }
}

/// Reads `request`'s body and gives the request the handlers take.
pub(super) async fn read(
    request: hyper::Request<Incoming>,
    now_ms: u64,
) -> Result<lambda_http::Request, Unread> {
    let (parts, body) = request.into_parts();
    let body = body_of(body).await?;
    let event = event(&parts, &body, now_ms);
    lambda_http::request::from_str(&event.to_string()).map_err(|e| Unread::Broken(e.to_string()))
}

/// A request's whole body, at most [`MAX_PAYLOAD_BYTES`].
pub(super) async fn body_of(body: Incoming) -> Result<Bytes, Unread> {
    match Limited::new(body, MAX_PAYLOAD_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(Unread::TooLarge),
        Err(e) => Err(Unread::Broken(e.to_string())),
    }
}

/// The payload v2 event of a request with `parts` and `body`, received at `now_ms`.
fn event(parts: &Parts, body: &[u8], now_ms: u64) -> Value {
    let path = parts.uri.path();
    let mut headers = Map::new();
    for (name, value) in &parts.headers {
        // A header value that is not visible ASCII is dropped, as no handler reads one.
        let Ok(value) = value.to_str() else { continue };
        match headers.get_mut(name.as_str()) {
            Some(Value::String(joined)) => {
                joined.push(',');
                joined.push_str(value);
            }
            _ => {
                headers.insert(name.as_str().to_owned(), Value::from(value));
            }
        }
    }
    let user_agent = headers.get("user-agent").cloned().unwrap_or_default();
    let (body, is_base64) = match std::str::from_utf8(body) {
        Ok(text) => (text.to_owned(), false),
        Err(_) => (base64::engine::general_purpose::STANDARD.encode(body), true),
    };
    json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": parts.uri.query().unwrap_or_default(),
        "headers": headers,
        "requestContext": {
            "accountId": "anonymous",
            "apiId": "bounded-rag-serve",
            "domainName": headers.get("host").cloned().unwrap_or_default(),
            "http": {
                "method": parts.method.as_str(),
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": user_agent,
            },
            "requestId": uuid::Uuid::new_v4().to_string(),
            "routeKey": "$default",
            "stage": "$default",
            "time": time_text(now_ms),
            "timeEpoch": now_ms,
        },
        "body": body,
        "isBase64Encoded": is_base64,
    })
}

/// `23/Nov/2025:10:57:00 +0000`, API Gateway's request time.
fn time_text(now_ms: u64) -> String {
    let format = time::macros::format_description!(
        "[day]/[month repr:short]/[year]:[hour]:[minute]:[second] +0000"
    );
    time::OffsetDateTime::from_unix_timestamp((now_ms / 1000) as i64)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_default()
}

/// A JSON error answer of the server itself (not of a handler): `{error, message}`.
pub(super) fn error_response(status: StatusCode, error: &str, message: &str) -> Response<Bytes> {
    let body = serde_json::json!({ "error": error, "message": message });
    let mut response = Response::new(Bytes::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        lambda_http::http::header::CONTENT_TYPE,
        lambda_http::http::HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::RequestExt;

    fn parts(method: &str, uri: &str, headers: &[(&str, &str)]) -> Parts {
        let mut builder = lambda_http::http::Request::builder()
            .method(method)
            .uri(uri);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(()).unwrap().into_parts().0
    }

    #[test]
    fn the_handlers_read_the_path_query_headers_and_body_as_on_aws() {
        let parts = parts(
            "GET",
            "/workflow/runs?limit=2&status=running",
            &[("accept", "text/event-stream"), ("x-a", "1"), ("x-a", "2")],
        );
        let event = event(&parts, b"{\"q\":1}", 1_763_895_420_123);
        let request = lambda_http::request::from_str(&event.to_string()).unwrap();
        assert_eq!(request.method(), "GET");
        assert_eq!(request.uri().path(), "/workflow/runs");
        let query = request.query_string_parameters();
        assert_eq!(
            (query.first("limit"), query.first("status")),
            (Some("2"), Some("running"))
        );
        assert_eq!(request.headers()["accept"], "text/event-stream");
        assert_eq!(request.headers()["x-a"], "1,2");
        assert_eq!(request.body().as_ref(), b"{\"q\":1}");
        assert_eq!(
            event["requestContext"]["time"],
            "23/Nov/2025:10:57:00 +0000"
        );
        assert_eq!(
            crate::entry::caller::of(&request),
            crate::rag::Caller::Anonymous
        );
    }

    #[test]
    fn a_body_that_is_not_text_arrives_intact() {
        let parts = parts("POST", "/workflow/run", &[]);
        let event = event(&parts, &[0xff, 0x00, 0x7b], 0);
        assert_eq!(event["isBase64Encoded"], true);
        let request = lambda_http::request::from_str(&event.to_string()).unwrap();
        assert_eq!(request.body().as_ref(), &[0xff, 0x00, 0x7b]);
    }
}
