//! The playground at `GET /`: one self-contained page (`playground.html`, HTML, CSS and
//! JavaScript compiled into the binary), with the workflow graph ([`crate::rag::diagram::json`])
//! written into it. Its Content-Security-Policy lets it talk to this server only, so nothing is
//! ever fetched from elsewhere.

use hyper::body::Bytes;
use lambda_http::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use lambda_http::http::{HeaderValue, Response};

/// The page as written; [`GRAPH`] marks where the graph goes.
const TEMPLATE: &str = include_str!("playground.html");

/// The placeholder of the graph's JSON in [`TEMPLATE`].
const GRAPH: &str = "{\"graph\":\"filled in by serve\"}";

/// Inline scripts and styles of this page only; requests to this server only.
const POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                      connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'";

/// The page with the workflow graph in it.
pub(super) fn render() -> String {
    // `</` cannot end the script element the JSON sits in.
    let graph = crate::rag::diagram::json()
        .to_string()
        .replace("</", "<\\/");
    TEMPLATE.replacen(GRAPH, &graph, 1)
}

/// The `200 text/html` answer carrying `page`.
pub(super) fn response(page: &'static str) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from_static(page.as_bytes()));
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("content-security-policy", HeaderValue::from_static(POLICY));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_carries_the_graph_and_fetches_nothing_from_elsewhere() {
        assert_eq!(TEMPLATE.matches(GRAPH).count(), 1);
        let page = render();
        assert!(!page.contains(GRAPH));
        assert!(page.contains("\"fork\":{\"at\":\"speculate\""));
        // No element loads anything, and no style imports anything.
        for outside in [
            " src=",
            "href=\"http",
            "url(http",
            "url(/",
            "@import",
            "<link",
        ] {
            assert!(!page.contains(outside), "{outside}");
        }
    }
}
