//! The HTTP function's responses handed to the Lambda runtime as they are built.
//!
//! `lambda_http` turns a `Response<B>` into the runtime's response by reading the body again
//! and decoding it by its `Content-Type`'s `charset` — `encoding_rs` and the tables of every
//! legacy encoding, about 150 KB of the bootstrap (BENCHMARKS.md, "Bootstrap size per
//! function"). The API's bodies are UTF-8 text (JSON) or empty already, so [`AsIs`] passes them
//! through unchanged.
use lambda_http::{Body, IntoResponse, Response};
use std::future::Future;
use std::pin::Pin;

/// A response the runtime sends as it is.
pub struct AsIs(pub Response<Body>);

impl IntoResponse for AsIs {
    fn into_response(self) -> Pin<Box<dyn Future<Output = Response<Body>> + Send>> {
        Box::pin(std::future::ready(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::http::header::CONTENT_TYPE;

    #[tokio::test]
    async fn the_runtime_gets_the_status_headers_and_body_that_were_built() {
        let mut built = Response::new(Body::Text(r#"{"answer":"é"}"#.to_owned()));
        *built.status_mut() = lambda_http::http::StatusCode::ACCEPTED;
        built.headers_mut().insert(
            CONTENT_TYPE,
            "application/json; charset=utf-8".parse().unwrap(),
        );
        let sent = AsIs(built.clone()).into_response().await;
        assert_eq!(sent.status(), 202);
        assert_eq!(sent.headers(), built.headers());
        assert_eq!(sent.body(), &Body::Text(r#"{"answer":"é"}"#.to_owned()));
        let empty = AsIs(Response::new(Body::Empty)).into_response().await;
        assert_eq!(empty.body(), &Body::Empty, "a 204 keeps no body");
    }
}
