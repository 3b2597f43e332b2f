//! A loopback stand-in for a deployed stack behind IAM auth: it checks each request's SigV4
//! signature the way AWS does, by computing it again (with `aws-sigv4`, from the fixed test
//! credentials [`ACCESS_KEY`] / [`SECRET_KEY`], for [`REGION`] and [`SERVICE`]), refuses a
//! missing or wrong one with 403 and API Gateway's message, and sends a signed request on to a
//! real `bounded-rag serve` (the API), streaming its answer back. It records each request line,
//! signed or refused. (Shared by two test modules; each uses part of it.)
#![allow(dead_code)]

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, SignableBody, SignableRequest, SigningSettings,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

pub const ACCESS_KEY: &str = "AKIASERVEREMOTETEST1";
pub const SECRET_KEY: &str = "serve-remote-test-secret-key/0123456789ab";
pub const REGION: &str = "eu-west-1";
pub const SERVICE: &str = "lambda";

/// API Gateway's answer to a signature that does not match.
pub const MISMATCH: &str = "The request signature we calculated does not match the signature \
                            you provided. Check your AWS Secret Access Key and signing method. \
                            Consult the service documentation for details.";

/// The environment of a `serve --remote` signing with the test credentials (`secret` is
/// [`SECRET_KEY`], or a wrong one).
pub fn credentials_env(secret: &'static str) -> [(&'static str, &'static str); 4] {
    [
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
        ("AWS_SECRET_ACCESS_KEY", secret),
        ("AWS_REGION", REGION),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ]
}

#[derive(Clone, Default)]
struct Seen {
    signed: Arc<Mutex<Vec<String>>>,
    refused: Arc<Mutex<Vec<String>>>,
}

pub struct SigningServer {
    /// `http://127.0.0.1:PORT/`.
    pub url: String,
    seen: Seen,
}

impl SigningServer {
    /// Serves on a free loopback port, in front of `upstream` (`http://127.0.0.1:PORT/`).
    pub async fn start(upstream: &str) -> SigningServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let seen = Seen::default();
        let upstream = upstream.trim_end_matches('/').to_owned();
        let app = Router::new()
            .fallback(answer)
            .with_state((seen.clone(), Arc::new(upstream)));
        tokio::spawn(async move { axum::serve(listener, app).await });
        SigningServer { url, seen }
    }

    /// `METHOD PATH?QUERY` of every request whose signature held, in order.
    pub fn signed(&self) -> Vec<String> {
        self.seen.signed.lock().unwrap().clone()
    }

    /// `METHOD PATH?QUERY` of every request refused, in order.
    pub fn refused(&self) -> Vec<String> {
        self.seen.refused.lock().unwrap().clone()
    }
}

async fn answer(State((seen, upstream)): State<(Seen, Arc<String>)>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 6 * 1024 * 1024).await.unwrap();
    let target = parts.uri.path_and_query().unwrap().as_str().to_owned();
    let line = format!("{} {target}", parts.method);
    if let Err(message) = verify(parts.method.as_str(), &target, &parts.headers, &body) {
        seen.refused.lock().unwrap().push(line);
        let body = serde_json::json!({ "message": message }).to_string();
        return (
            StatusCode::FORBIDDEN,
            [("content-type", "application/json")],
            body,
        )
            .into_response();
    }
    seen.signed.lock().unwrap().push(line);
    let client = bounded_rag::tls::reqwest_builder().build().unwrap();
    let mut forward = client
        .request(parts.method.clone(), format!("{upstream}{target}"))
        .body(body);
    for name in ["accept", "content-type", "last-event-id", "idempotency-key"] {
        if let Some(value) = parts.headers.get(name) {
            forward = forward.header(name, value);
        }
    }
    let response = forward.send().await.unwrap();
    let mut answer = Response::builder().status(response.status());
    for (name, value) in response.headers() {
        if name != "content-length" && name != "transfer-encoding" {
            answer = answer.header(name, value);
        }
    }
    answer
        .body(Body::from_stream(response.bytes_stream()))
        .unwrap()
}

/// Computes the request's signature again from the test credentials and compares: `Err` with
/// API Gateway's message when it is missing or differs.
fn verify(
    method: &str,
    target: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(), &'static str> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let authorization = header("authorization").ok_or("Forbidden")?;
    let fields = authorization
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .ok_or("Forbidden")?;
    let field = |name: &str| {
        fields
            .split(", ")
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
    };
    let (credential, signed_headers, signature) = (
        field("Credential").ok_or("Forbidden")?,
        field("SignedHeaders").ok_or("Forbidden")?,
        field("Signature").ok_or("Forbidden")?,
    );
    let scope: Vec<&str> = credential.split('/').collect();
    if scope.len() != 5 || scope[0] != ACCESS_KEY || scope[2] != REGION || scope[3] != SERVICE {
        return Err("The security token included in the request is invalid.");
    }
    let date = header("x-amz-date").ok_or("Forbidden")?;
    let format = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    let time: SystemTime = time::PrimitiveDateTime::parse(date, &format)
        .map_err(|_| "Forbidden")?
        .assume_utc()
        .into();
    // The headers the client signed, but those the signer adds itself.
    let signed: Vec<(&str, &str)> = signed_headers
        .split(';')
        .filter(|name| !matches!(*name, "host" | "x-amz-date" | "x-amz-content-sha256"))
        .map(|name| (name, header(name).unwrap_or_default()))
        .collect();
    let url = format!("http://{}{target}", header("host").ok_or("Forbidden")?);
    let identity: Identity = Credentials::new(ACCESS_KEY, SECRET_KEY, None, None, "test").into();
    let mut settings = SigningSettings::default();
    if header("x-amz-content-sha256").is_some() {
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    }
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(REGION)
        .name(SERVICE)
        .time(time)
        .settings(settings)
        .build()
        .unwrap()
        .into();
    let request = SignableRequest::new(method, &url, signed.into_iter(), SignableBody::Bytes(body))
        .map_err(|_| "Forbidden")?;
    let expected = sign(request, &params).unwrap();
    if expected.signature() == signature {
        Ok(())
    } else {
        Err(MISMATCH)
    }
}
