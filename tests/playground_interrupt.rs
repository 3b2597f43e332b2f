//! A run that waits for a person, in a real browser (headless Chromium through chromedriver)
//! against `bounded-rag serve` (offline model, bundled knowledge base, `CLARIFY` on by
//! default): a question nothing names shows its clarifying question and the knowledge base's
//! subjects in place, again after a reload; the typed answer goes on with the same run, shown as
//! it ends; an answer the run no longer takes (answered elsewhere) shows the `409` and the run
//! as it is now; with `APPROVE_STEPS=web_search`, the web search waits for the Approve button.

use crate::playground::browser::Browser;
use crate::playground::page::{ask, click, get_json, shown};
use crate::playground::server::Serve;
use crate::support::run_body::step_names as names;
use crate::support::web_server::{ScriptedWeb, WebReply, WebResult};

use fantoccini::Locator;
use serde_json::{json, Value};

/// A question whose subject nothing names.
const DANGLING: &str = "How do I treat it?";

/// Types `text` into the answer box, replacing what it holds.
async fn type_answer(browser: &Browser, text: &str) {
    let input = browser
        .client
        .find(Locator::Css("#interrupt-answer"))
        .await
        .unwrap();
    input.clear().await.unwrap();
    input.send_keys(text).await.unwrap();
}

/// Asserts the page shows `run`'s clarifying question and its options, with an answer box.
async fn assert_asks(browser: &Browser, run: &Value) {
    let run_id = run["run_id"].as_str().unwrap();
    assert_eq!(
        browser.text("#run-status").await,
        format!("Run {run_id}: waiting for your answer")
    );
    assert_eq!(browser.attr("#interrupt", "hidden").await, None);
    assert_eq!(
        browser.attr("#interrupt", "data-kind").await.as_deref(),
        Some("clarify")
    );
    assert_eq!(
        browser.text("#interrupt-question").await,
        run["interrupt"]["question"]
    );
    let options: Vec<&str> = run["interrupt"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    assert!(!options.is_empty(), "{run}");
    assert_eq!(browser.texts("#interrupt-options button").await, options);
    assert_eq!(
        browser.attr("#interrupt-decide", "hidden").await.as_deref(),
        Some("true")
    );
    assert_eq!(browser.text("#interrupt-send").await, "Send");
    assert_eq!(
        browser.attrs("#timeline [data-step]", "data-step").await,
        ["clarify"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_nothing_names_is_asked_back_on_the_page_and_the_answer_completes_the_run() {
    let serve = Serve::start(&[]);
    let browser = Browser::start().await;
    let api = |id: &str| {
        let url = format!("{}workflow/runs/{id}", serve.url);
        async move { get_json(&url).await }
    };
    ask(&browser, &serve.url, DANGLING, "").await;
    browser.wait_for_state("waiting").await;
    let run_id = shown(&browser).await;
    let waiting = api(&run_id).await;
    assert_eq!(waiting["status"], "waiting", "{waiting}");
    assert_eq!(waiting["interrupt"]["kind"], "clarify");
    assert!(waiting["interrupt"]["question"]
        .as_str()
        .unwrap()
        .contains("\"it\""));
    assert_asks(&browser, &waiting).await;
    browser.screenshot("playground-clarify.png").await;

    // A reload reads the run again from sessionStorage and its events: the question is back.
    browser.client.refresh().await.unwrap();
    browser.wait_for_state("waiting").await;
    assert_eq!(shown(&browser).await, run_id);
    assert_asks(&browser, &waiting).await;

    // An option fills the answer box; the typed answer replaces it and is sent.
    let first = waiting["interrupt"]["options"][0].as_str().unwrap();
    click(&browser, "#interrupt-options button").await;
    let filled = browser
        .client
        .find(Locator::Css("#interrupt-answer"))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap();
    assert_eq!(filled.as_deref(), Some(first));
    type_answer(&browser, "durian patch canker").await;
    click(&browser, "#interrupt-send").await;
    browser.wait_for_state("done").await;

    // The same run, answered, shown as a finished run is.
    assert_eq!(shown(&browser).await, run_id);
    let run = api(&run_id).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        run["metadata"]["clarified_question"],
        "How do I treat durian patch canker?"
    );
    let steps = names(&run);
    assert_eq!(
        steps.iter().filter(|s| **s == "clarify").count(),
        1,
        "{steps:?}"
    );
    assert_eq!(
        browser.text("#run-status").await,
        format!("Run {run_id}: completed")
    );
    assert_eq!(
        browser.attr("#interrupt", "hidden").await.as_deref(),
        Some("true")
    );
    let answer = run["answer"].as_str().unwrap();
    assert!(answer.contains("Patch canker"), "{answer}");
    assert_eq!(browser.text("#answer").await, answer);
    let shown_steps = browser.attrs("#timeline [data-step]", "data-step").await;
    assert_eq!(shown_steps, steps);
    assert_eq!(shown_steps[0], "clarify");
    assert!(
        ["route_question", "kg_retrieval"].contains(&shown_steps[1].as_str()),
        "{shown_steps:?}"
    );
    let citations = run["citations"].as_array().unwrap();
    assert!(!citations.is_empty());
    assert_eq!(
        browser.texts("#citations summary").await.len(),
        citations.len()
    );
    browser.screenshot("playground-clarified.png").await;

    // A wait answered elsewhere first: the page's answer is refused (409), said so, and the
    // run is shown as it is now.
    ask(&browser, &serve.url, DANGLING, "").await;
    browser.wait_for_state("waiting").await;
    let other_id = shown(&browser).await;
    assert_ne!(other_id, run_id);
    let client = bounded_rag::tls::reqwest_builder().build().unwrap();
    let elsewhere = client
        .post(format!("{}workflow/runs/{other_id}/resume", serve.url))
        .json(&json!({"answer": "durian patch canker"}))
        .send()
        .await
        .unwrap();
    assert_eq!(elsewhere.status(), 200);
    type_answer(&browser, "durian mealybugs").await;
    click(&browser, "#interrupt-send").await;
    browser.wait_for_state("done").await;
    let notice = browser.text("#notice").await;
    assert!(
        notice.starts_with("The server refused the answer (HTTP 409): ")
            && notice.contains("does not take an answer"),
        "{notice}"
    );
    assert_eq!(
        browser.text("#run-status").await,
        format!("Run {other_id}: completed")
    );
    assert_eq!(
        api(&other_id).await["metadata"]["clarified_question"],
        "How do I treat durian patch canker?"
    );
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_search_that_waits_for_approval_runs_when_approved_on_the_page() {
    let web = ScriptedWeb::start([WebReply::results([WebResult::new(
        "Durian prices this week",
        "https://example.com/durian-prices",
        "Durian prices today: Musang King durian sells for 60 ringgit a kilogram this week.",
        0.9,
    )])])
    .await;
    let base = web.base_url();
    let serve = Serve::start(&[
        ("APPROVE_STEPS", "web_search"),
        ("WEB_SEARCH_BASE_URL", &base),
        ("WEB_SEARCH_API_KEY", "test-key"),
    ]);
    let browser = Browser::start().await;
    let question = "What is the latest durian price today?";
    ask(&browser, &serve.url, question, "").await;
    browser.wait_for_state("waiting").await;
    let run_id = shown(&browser).await;
    let waiting = get_json(&format!("{}workflow/runs/{run_id}", serve.url)).await;
    assert_eq!(waiting["interrupt"]["kind"], "approve", "{waiting}");
    assert_eq!(web.calls(), 0, "nothing is searched before the approval");
    assert_eq!(
        browser.text("#run-status").await,
        format!("Run {run_id}: waiting for your approval")
    );
    assert_eq!(
        browser.text("#interrupt-question").await,
        "Approve the step web_search?"
    );
    assert_eq!(
        browser.text("#interrupt-what").await,
        format!(
            "It would run web_search with: “{}”",
            waiting["interrupt"]["what"].as_str().unwrap()
        )
    );
    assert_eq!(browser.text("#interrupt-approve").await, "Approve");
    assert_eq!(browser.text("#interrupt-deny").await, "Deny");
    assert_eq!(
        browser
            .attr("#interrupt-clarify", "hidden")
            .await
            .as_deref(),
        Some("true")
    );
    browser.screenshot("playground-approve.png").await;

    click(&browser, "#interrupt-approve").await;
    browser.wait_for_state("done").await;
    assert_eq!(shown(&browser).await, run_id);
    let run = get_json(&format!("{}workflow/runs/{run_id}", serve.url)).await;
    assert_ne!(run["status"], "waiting", "{run}");
    assert_eq!(web.calls(), 1, "the approved search runs once");
    assert!(names(&run).contains(&"web_search"));
    assert_eq!(
        browser.text("#run-status").await,
        format!("Run {run_id}: {}", run["status"].as_str().unwrap())
    );
    assert_eq!(
        browser.attrs("#timeline [data-step]", "data-step").await,
        names(&run)
    );
    assert_eq!(
        browser.attr("#interrupt", "hidden").await.as_deref(),
        Some("true")
    );
    browser.close().await;
}
