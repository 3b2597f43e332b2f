//! "Fork from here" in a real browser (headless Chromium through chromedriver) against
//! `bounded-rag serve` (offline model, bundled knowledge base, speculation on): every step of an
//! ended run but its last offers a fork (the speculation's branches as one, after their join);
//! a fork shows the new run linked to the old one, which opens again unchanged; a question
//! edited in the box is asked from that step.

use crate::playground::browser::Browser;
use crate::playground::page::{ask, click, get_json, shown};
use crate::playground::server::Serve;

use crate::support::happy_path::QUESTION;
use fantoccini::Locator;
use serde_json::{json, Value};

/// Clicks "Fork from here" after step `step`, then waits until the page shows a finished run
/// other than `before`.
async fn fork(browser: &Browser, step: u32, before: &str) -> String {
    let css = format!("#timeline button[data-fork-step='{step}']");
    click(browser, &css).await;
    for _ in 0..600 {
        let now = shown(browser).await;
        let state = browser.attr("body", "data-state").await;
        if !now.is_empty() && now != before && state.as_deref() == Some("done") {
            return now;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!(
        "the fork never ended on the page: {}",
        browser.text("#notice").await
    );
}

fn steps(run: &Value) -> Vec<Value> {
    run["workflow_steps"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_from_a_timeline_row_is_linked_to_its_run_and_asks_an_edited_question() {
    let serve = Serve::start(&[]);
    let browser = Browser::start().await;
    ask(&browser, &serve.url, QUESTION, "").await;
    browser.wait_for_state("done").await;
    let original_id = shown(&browser).await;
    let api = |id: &str| {
        let url = format!("{}workflow/runs/{id}", serve.url);
        async move { get_json(&url).await }
    };
    let original = api(&original_id).await;
    assert_eq!(original["status"], "completed");
    // Steps 1 (kg_retrieval), 4 (the join of the three branches) and 5 can be forked from;
    // the branches themselves and the last step cannot.
    assert_eq!(
        browser
            .attrs("#timeline button[data-fork-step]", "data-fork-step")
            .await,
        ["1", "4", "5"]
    );
    assert_eq!(
        browser.attr("#forked-from", "hidden").await.as_deref(),
        Some("true")
    );

    // Fork after grade_hallucinations: the page shows the new run, linked to the old one.
    let fork_id = fork(&browser, 5, &original_id).await;
    let forked = api(&fork_id).await;
    assert_eq!(forked["status"], "completed", "{forked}");
    assert_eq!(
        forked["metadata"]["forked_from"],
        json!({"run_id": original_id, "step": 5})
    );
    assert_eq!(steps(&forked)[..5], steps(&original)[..5]);
    assert_eq!(
        browser.text("#run-status").await,
        format!("Run {fork_id}: completed")
    );
    assert!(browser
        .text("#forked-from")
        .await
        .starts_with(&format!("Forked from run {original_id} after step 5.")));
    assert_eq!(browser.text("#answer").await, forked["answer"]);

    // The link opens the original again, as it was.
    click(&browser, "#open-original").await;
    browser.wait_for_state("done").await;
    for _ in 0..100 {
        if shown(&browser).await == original_id {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(shown(&browser).await, original_id);
    browser.wait_for_state("done").await;
    assert_eq!(api(&original_id).await, original);

    // An edited question, forked after retrieval: asked from there, searched again.
    let question = "How do I control mealybugs on durian?";
    let input = browser
        .client
        .find(Locator::Css("#question"))
        .await
        .unwrap();
    input.clear().await.unwrap();
    input.send_keys(question).await.unwrap();
    let asked_id = fork(&browser, 1, &original_id).await;
    let asked = api(&asked_id).await;
    assert_eq!(asked["question"], question);
    assert_eq!(asked["metadata"]["forked_from"]["step"], 1);
    let cited: Vec<&str> = asked["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["url"].as_str().unwrap())
        .collect();
    assert!(cited.iter().any(|u| u.contains("mealybugs")), "{cited:?}");
    browser.close().await;
}
