//! The Tavily-compatible client against the scripted server on loopback: request shape,
//! bearer key, result mapping, one attempt per call, and error classification.
use crate::support;

use bounded_rag::error::{Classify, ErrorClass};
use bounded_rag::knowledge::DocKind;
use bounded_rag::search::{TavilyClient, TavilyConfig, WebSearch, WebSearchError};
use bounded_rag::secrets::Secret;
use serde_json::json;
use std::time::Duration;
use support::web_server::{ScriptedWeb, WebReply, WebResult};

const KEY: &str = "tvly-test-key-123";
const TIMEOUT: Duration = Duration::from_secs(5);

fn client(web: &ScriptedWeb, key: Option<&str>) -> TavilyClient {
    TavilyClient::new(TavilyConfig {
        base_url: format!("{}/", web.base_url()),
        api_key: key.map(Secret::new),
    })
    .expect("client")
}

fn two_results() -> WebReply {
    WebReply::results([
        WebResult::new(
            "Durian canker",
            "https://a.example/canker",
            "Phytophthora...",
            0.91,
        ),
        WebResult::new(
            "Durian borer",
            "https://b.example/borer",
            "Conogethes...",
            0.42,
        ),
    ])
}

#[tokio::test]
async fn posts_query_and_max_results_with_bearer_key() {
    let web = ScriptedWeb::start([two_results()]).await;
    let docs = client(&web, Some(KEY))
        .search("durian \"patch\" canker?", 2, TIMEOUT)
        .await
        .unwrap();

    let call = web.last().expect("one call");
    assert_eq!(web.calls(), 1);
    assert_eq!(call.path, "/search");
    assert_eq!(
        call.body,
        json!({"query": "durian \"patch\" canker?", "max_results": 2})
    );
    assert_eq!(
        call.authorization.as_deref(),
        Some("Bearer tvly-test-key-123")
    );

    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0].title, "Durian canker");
    assert_eq!(docs[0].url, "https://a.example/canker");
    assert_eq!(docs[0].id, docs[0].url);
    assert_eq!(docs[0].content, "Phytophthora...");
    assert!((docs[0].score - 0.91).abs() < 1e-6);
    assert!(docs.iter().all(|d| d.kind == DocKind::Web));
}

#[tokio::test]
async fn no_key_sends_no_authorization_and_extra_results_are_cut() {
    let web = ScriptedWeb::start([WebReply::echo()]).await;
    let search = client(&web, None);
    let docs = search.search("q", 3, TIMEOUT).await.unwrap();
    assert_eq!(docs.len(), 3);
    assert_eq!(web.last().unwrap().authorization, None);

    // A server that ignores max_results never yields more than asked for.
    web.script([WebReply::results(
        (0..5).map(|i| WebResult::new("t", &format!("https://x/{i}"), "c", 0.5)),
    )]);
    assert_eq!(search.search("q", 2, TIMEOUT).await.unwrap().len(), 2);
}

#[tokio::test]
async fn missing_optional_fields_get_defaults() {
    let body = json!({"results": [{"url": "https://x.example/page"}]});
    let web = ScriptedWeb::start([WebReply::Body(body)]).await;
    let docs = client(&web, None).search("q", 5, TIMEOUT).await.unwrap();
    assert_eq!(docs[0].title, "https://x.example/page");
    assert_eq!(docs[0].content, "");
    assert_eq!(docs[0].score, 0.0);
}

#[tokio::test]
async fn server_errors_are_transient_and_not_retried_by_the_client() {
    let web = ScriptedWeb::start([WebReply::status(500), two_results()]).await;
    let search = client(&web, Some(KEY));
    let err = search.search("q", 2, TIMEOUT).await.unwrap_err();
    assert!(
        matches!(err, WebSearchError::Http { status: 500, .. }),
        "{err}"
    );
    assert_eq!(err.class(), ErrorClass::Transient);
    assert_eq!(
        web.calls(),
        1,
        "one attempt per call: the engine owns retries"
    );
    // The next call (the engine's retry) succeeds on the same pooled client.
    assert_eq!(search.search("q", 2, TIMEOUT).await.unwrap().len(), 2);
}

#[tokio::test]
async fn unauthorized_is_permanent_and_never_leaks_the_key() {
    let echo_key = format!("{{\"detail\":\"invalid key Bearer {KEY}\"}}");
    let web = ScriptedWeb::start([WebReply::status(401).body(echo_key)]).await;
    let err = client(&web, Some(KEY))
        .search("q", 2, TIMEOUT)
        .await
        .unwrap_err();
    assert!(
        matches!(err, WebSearchError::Http { status: 401, .. }),
        "{err}"
    );
    assert_eq!(err.class(), ErrorClass::Permanent);
    assert_eq!(err.retry_after(), None);
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains(KEY), "{shown}");
    assert!(shown.contains("[redacted]"), "{shown}");
}

#[tokio::test]
async fn too_many_requests_carries_retry_after() {
    let web = ScriptedWeb::start([WebReply::status(429).retry_after("12")]).await;
    let err = client(&web, None)
        .search("q", 2, TIMEOUT)
        .await
        .unwrap_err();
    assert!(err.is_transient(), "{err}");
    assert_eq!(err.retry_after(), Some(Duration::from_secs(12)));

    let date = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(60));
    web.script([WebReply::status(503).retry_after(date)]);
    let err = client(&web, None)
        .search("q", 2, TIMEOUT)
        .await
        .unwrap_err();
    let wait = err.retry_after().expect("date form");
    assert!(
        wait > Duration::from_secs(50) && wait <= Duration::from_secs(60),
        "{wait:?}"
    );
}

#[tokio::test]
async fn slow_servers_time_out_as_transient() {
    let web = ScriptedWeb::start([two_results().delayed(Duration::from_secs(3))]).await;
    let started = std::time::Instant::now();
    let err = client(&web, None)
        .search("q", 2, Duration::from_millis(200))
        .await
        .unwrap_err();
    assert!(matches!(err, WebSearchError::Timeout { .. }), "{err}");
    assert!(err.is_transient());
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn malformed_bodies_and_bad_requests_are_permanent() {
    let web = ScriptedWeb::start([WebReply::Text("<html>oops</html>".into())]).await;
    let err = client(&web, None)
        .search("q", 2, TIMEOUT)
        .await
        .unwrap_err();
    assert!(matches!(err, WebSearchError::InvalidResponse(_)), "{err}");
    assert_eq!(err.class(), ErrorClass::Permanent);

    web.script([WebReply::status(400)]);
    let err = client(&web, None)
        .search("q", 2, TIMEOUT)
        .await
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Permanent);
    assert!(err.to_string().contains("scripted HTTP 400"), "{err}");
}

#[tokio::test]
async fn connections_are_reused_across_calls() {
    let web = ScriptedWeb::start([two_results()]).await;
    let search = client(&web, None);
    for _ in 0..3 {
        search.search("q", 2, TIMEOUT).await.unwrap();
    }
    let peers: std::collections::HashSet<_> = web.recorded().iter().map(|c| c.peer).collect();
    assert_eq!(peers.len(), 1, "one pooled connection");
}

#[test]
fn the_threaded_server_serves_blocking_callers() {
    let web = ScriptedWeb::start_in_thread([two_results()]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let docs = runtime
        .block_on(client(&web, None).search("q", 2, TIMEOUT))
        .unwrap();
    assert_eq!(docs.len(), 2);
    assert_eq!(web.queries(), ["q"]);
}
