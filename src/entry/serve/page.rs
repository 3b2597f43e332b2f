//! The playground at `GET /`: one self-contained page, served as a single HTML document with
//! its CSS and JavaScript inline, assembled from the files under `playground/` (compiled into
//! the binary; no build step): `page.html` (the markup), `page.css`, `run.js` (asking, the
//! event stream, resuming) and `view.js` (the answer, timeline, graph and lists). The workflow
//! graph ([`crate::rag::diagram::json`]) is written into it. Its Content-Security-Policy lets it
//! talk to this server only, so nothing is ever fetched from elsewhere.

use hyper::body::Bytes;
use lambda_http::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use lambda_http::http::{HeaderValue, Response};

/// The markup; [`STYLE`], [`SCRIPT`] and [`GRAPH`] mark where the rest goes.
const TEMPLATE: &str = include_str!("playground/page.html");

/// The placeholder of the style sheet in [`TEMPLATE`].
const STYLE: &str = "/* style: playground/page.css */";

/// The placeholder of the scripts in [`TEMPLATE`].
const SCRIPT: &str = "/* script: playground/run.js, playground/view.js */";

/// The placeholder of the graph's JSON in [`TEMPLATE`].
const GRAPH: &str = "{\"graph\":\"filled in by serve\"}";

/// Inline scripts and styles of this page only; requests to this server only.
const POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                      connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'";

/// The page, whole: markup, style, scripts and the workflow graph.
pub(super) fn render() -> String {
    // `</` cannot end the script element the JSON sits in.
    let graph = crate::rag::diagram::json()
        .to_string()
        .replace("</", "<\\/");
    let script = [
        include_str!("playground/run.js"),
        include_str!("playground/view.js"),
    ]
    .concat();
    TEMPLATE
        .replacen(STYLE, include_str!("playground/page.css"), 1)
        .replacen(SCRIPT, &script, 1)
        .replacen(GRAPH, &graph, 1)
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
        for placeholder in [STYLE, SCRIPT, GRAPH] {
            assert_eq!(TEMPLATE.matches(placeholder).count(), 1, "{placeholder}");
        }
        let page = render();
        for placeholder in [STYLE, SCRIPT, GRAPH] {
            assert!(!page.contains(placeholder), "{placeholder}");
        }
        assert!(page.contains(".skip:focus {") && page.contains("async function ask(event)"));
        assert!(page.contains("function renderGraph()"));
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
