//! The playground page as its tests drive it: the link that asks a question (`?q=`), opening it,
//! the run the page shows (its id in `sessionStorage`), a click, and a GET of the API's JSON.

use super::browser::Browser;
use fantoccini::Locator;
use serde_json::Value;

/// The page's link for `question` with extra query parameters.
pub fn link(base: &str, question: &str, extra: &str) -> String {
    let q: String = question
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("{base}?q={q}{extra}")
}

/// Opens the page at `base` asking `question`, with extra query parameters.
pub async fn ask(browser: &Browser, base: &str, question: &str, extra: &str) {
    browser
        .client
        .goto(&link(base, question, extra))
        .await
        .unwrap();
}

/// The id of the run the page shows (empty when none).
pub async fn shown(browser: &Browser) -> String {
    let id = browser
        .eval("return JSON.parse(sessionStorage.getItem('bounded-rag.run')).id")
        .await;
    id.as_str().unwrap_or_default().to_owned()
}

/// Clicks the element `css` selects.
pub async fn click(browser: &Browser, css: &str) {
    browser
        .client
        .find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// A GET of `url`'s JSON.
pub async fn get_json(url: &str) -> Value {
    let client = bounded_rag::tls::reqwest_builder().build().unwrap();
    client.get(url).send().await.unwrap().json().await.unwrap()
}
