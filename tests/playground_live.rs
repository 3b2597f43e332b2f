//! The playground in headless Chromium against runs that take time: `serve` talks to a scripted
//! OpenAI-compatible server whose answer streams slowly, so the page can be reloaded, and a
//! run cancelled, while the run goes on. Reloading picks the run back up with `Last-Event-ID`
//! (the id of the last event the tab received), and the cancel button ends the run
//! `cancelled`.

use crate::playground::browser;
use crate::playground::page::get_json;
use crate::playground::proxy;
use crate::playground::server;
use crate::support;

use browser::Browser;
use fantoccini::Locator;
use serde_json::Value;
use server::Serve;
use std::time::Duration;
use support::llm_server::{Reply, Script, ScriptedLlm};

/// Streamed 4 characters at a time, 60 ms apart: about 3 s of answer.
const ANSWER: &str = "Patch canker is caused by Phytophthora palmivora, a soil-borne water mould, \
                      on the durian trunk [1]. It attacks the bark of the trunk and main limbs [1].";

async fn slow_llm() -> ScriptedLlm {
    let answer = Reply::answer(ANSWER)
        .chunked(4)
        .every(Duration::from_millis(60));
    ScriptedLlm::start(Script::defaults().on("generate_answer", [answer])).await
}

fn serve_with(llm: &ScriptedLlm) -> Serve {
    Serve::start(&[
        ("LLM_BASE_URL", llm.base_url().as_str()),
        ("LLM_MODEL", "scripted"),
    ])
}

/// The page's saved run.
async fn saved(browser: &Browser) -> Value {
    browser
        .eval("return JSON.parse(sessionStorage.getItem('bounded-rag.run'))")
        .await
}

/// Waits until the answer has started streaming in (some text of attempt 1 shown).
async fn until_streaming(browser: &Browser) {
    browser
        .client
        .wait()
        .at_most(browser::WAIT)
        .for_element(Locator::XPath(
            "//div[@id='answer' and string-length(.) > 8]",
        ))
        .await
        .expect("the answer starts streaming");
}

const QUESTION_LINK: &str = "?q=What%20causes%20patch%20canker%20in%20durian%3F";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_mid_run_picks_the_run_back_up_after_the_last_event_received() {
    let llm = slow_llm().await;
    let serve = serve_with(&llm);
    let proxy = proxy::CutProxy::recording(serve.authority()).await;
    let browser = Browser::start().await;
    browser
        .client
        .goto(&format!("{}{QUESTION_LINK}", proxy.url))
        .await
        .unwrap();
    until_streaming(&browser).await;
    let before = saved(&browser).await;
    let run_id = before["id"].as_str().unwrap().to_owned();
    assert_eq!(before["status"], "running");
    browser.client.refresh().await.unwrap();
    browser.wait_for_state("done").await;
    // The reloaded page asked for the events after the last one this tab had.
    let seen = proxy.seen();
    let at = seen
        .iter()
        .position(|l| l.starts_with(&format!("GET /workflow/runs/{run_id}/events ")))
        .unwrap_or_else(|| panic!("no resumed stream: {seen:?}"));
    let header = seen[at + 1].split_once(':').unwrap().1.trim().to_owned();
    let sent = saved(&browser).await;
    assert!(seen[at + 1]
        .to_ascii_lowercase()
        .starts_with("last-event-id:"));
    // The id saved when the page was reloaded: at or after the one read just before (an event
    // may land between that read and the reload), and before the run's end.
    let before_id = before["lastId"].as_str().unwrap();
    let step = |id: &str| id.split('.').next().unwrap().parse::<u32>().unwrap();
    assert!(step(&header) >= step(before_id), "{header} vs {before_id}");
    assert!(!header.ends_with(".end"), "{header}");
    // The same run, completed, with every step once.
    let run = get_json(&format!("{}workflow/runs/{run_id}", serve.url)).await;
    assert_eq!(
        (run["status"].as_str(), sent["id"].as_str()),
        (Some("completed"), Some(run_id.as_str()))
    );
    let names: Vec<&str> = run["workflow_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        browser.attrs("#timeline [data-step]", "data-step").await,
        names
    );
    assert_eq!(browser.text("#answer").await, ANSWER);
    assert_eq!(llm.calls("generate_answer"), 1);
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cancel_button_stops_a_running_run() {
    let llm = slow_llm().await;
    let serve = serve_with(&llm);
    let browser = Browser::start().await;
    browser
        .client
        .goto(&format!("{}{QUESTION_LINK}", serve.url))
        .await
        .unwrap();
    until_streaming(&browser).await;
    let run_id = saved(&browser).await["id"].as_str().unwrap().to_owned();
    let cancel = browser.client.find(Locator::Id("cancel")).await.unwrap();
    assert_eq!(cancel.attr("disabled").await.unwrap(), None);
    cancel.click().await.unwrap();
    browser.wait_for_state("done").await;
    let run = get_json(&format!("{}workflow/runs/{run_id}", serve.url)).await;
    assert_eq!(run["status"], "cancelled");
    assert_eq!(
        browser.text("#run-status").await,
        format!("Run {run_id}: cancelled")
    );
    assert_eq!(llm.calls("generate_answer"), 1);
    browser.close().await;
}
