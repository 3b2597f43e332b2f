//! The playground at `GET /`: one self-contained page, served as a single HTML document with
//! its CSS and JavaScript inline, assembled from the files under `playground/` (compiled into
//! the binary; no build step): `page.html` (the markup), `page.css`, `run.js` (asking, the
//! event stream, resuming) and `view.js` (the answer, timeline, graph and lists). The workflow
//! graph ([`crate::rag::diagram_json`]) is written into it, and so is the stack it talks to
//! (this server's handlers, or the deployed stack of `serve --remote`). Its
//! Content-Security-Policy lets it talk to this server only, so nothing is ever fetched from
//! elsewhere (with `--remote` this server signs and sends on what the page asks).

use super::remote::Target;
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

/// The placeholder of the stack's label in [`TEMPLATE`].
const STACK: &str = "<p id=\"stack\">stack: filled in by serve</p>";

/// Inline scripts and styles of this page only; requests to this server only.
const POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                      connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'";

/// The page, whole: markup, style, scripts, the workflow graph, and the stack it talks to
/// (`remote`, or this server's own handlers).
pub(super) fn render(remote: Option<&Target>) -> String {
    // `</` cannot end the script element the JSON sits in.
    let graph = crate::rag::diagram_json().to_string().replace("</", "<\\/");
    let script = [
        include_str!("playground/run.js"),
        include_str!("playground/view.js"),
    ]
    .concat();
    TEMPLATE
        .replacen(STYLE, include_str!("playground/page.css"), 1)
        .replacen(SCRIPT, &script, 1)
        .replacen(GRAPH, &graph, 1)
        .replacen(STACK, &stack(remote), 1)
}

/// The label naming the stack the page talks to (`data-remote` holds a remote's URL).
fn stack(remote: Option<&Target>) -> String {
    match remote {
        None => "<p id=\"stack\" data-remote=\"\">Stack: this server's own handlers \
                 (<code>bounded-rag serve</code>, local state).</p>"
            .to_owned(),
        Some(target) => {
            let url = escape(target.url());
            format!(
                "<p id=\"stack\" class=\"remote\" data-remote=\"{url}\">Stack: the deployed \
                 stack at <code>{url}</code>. Every call is signed with SigV4 ({service}, \
                 {region}) by <code>bounded-rag serve --remote</code>; your AWS credentials \
                 stay with it.</p>",
                service = target.service().as_str(),
                region = escape(target.region()),
            )
        }
    }
}

/// `text` safe in HTML text and in a quoted attribute.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
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
        for placeholder in [STYLE, SCRIPT, GRAPH, STACK] {
            assert_eq!(TEMPLATE.matches(placeholder).count(), 1, "{placeholder}");
        }
        let page = render(None);
        for placeholder in [STYLE, SCRIPT, GRAPH, STACK] {
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

    #[test]
    fn the_page_names_the_stack_it_talks_to() {
        assert!(render(None).contains("Stack: this server's own handlers"));
        let target =
            Target::new("https://abc.lambda-url.eu-west-1.on.aws/", None, None, None).unwrap();
        let page = render(Some(&target));
        assert!(page.contains(
            "data-remote=\"https://abc.lambda-url.eu-west-1.on.aws\">Stack: the deployed stack at \
             <code>https://abc.lambda-url.eu-west-1.on.aws</code>. Every call is signed with SigV4 \
             (lambda, eu-west-1)"
        ));
        assert_eq!(
            escape("<a href=\"x\">&"),
            "&lt;a href=&quot;x&quot;&gt;&amp;"
        );
    }
}
