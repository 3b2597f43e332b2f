//! The playground in a real browser: Debian's headless Chromium, driven through chromedriver,
//! against `bounded-rag serve` (offline model, bundled knowledge base). It opens
//! `/?q=What causes patch canker in durian?` and checks what the page shows against what the
//! API answers for the same run: the streamed answer, its citations, the timeline's steps in
//! order (the speculation fork's branches side by side), a token budget's `best_effort` run
//! naming its limit, a dropped stream picked back up with `Last-Event-ID`, and a server that
//! stopped. With `PLAYGROUND_SCREENSHOTS=DIR` it also saves the README's screenshots there.

use crate::playground::browser;
use crate::playground::page::{ask, click, get_json};
use crate::playground::proxy;
use crate::playground::server;

use crate::support::happy_path::{QUESTION, SPECULATED_STEPS as STEPS};
use browser::Browser;
use fantoccini::Locator;
use serde_json::Value;
use server::Serve;

/// The run the page shows, as the API gives it.
async fn api_run(serve: &Serve, browser: &Browser) -> Value {
    let run_id = browser
        .eval("return JSON.parse(sessionStorage.getItem('bounded-rag.run')).id")
        .await;
    let url = format!("{}workflow/runs/{}", serve.url, run_id.as_str().unwrap());
    get_json(&url).await
}

fn names(run: &Value) -> Vec<String> {
    run["workflow_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_playground_shows_a_streamed_run_its_citations_timeline_and_limits() {
    let serve = Serve::start(&[]);
    assert!(
        serve.banner[1].contains("loopback only"),
        "{:?}",
        serve.banner
    );
    let browser = Browser::start().await;

    // A completed run, asked by the link.
    ask(&browser, &serve.url, QUESTION, "").await;
    browser.wait_for_state("done").await;
    let run = api_run(&serve, &browser).await;
    assert_eq!(run["status"], "completed");
    let answer = run["answer"].as_str().unwrap();
    assert!(answer.starts_with("Patch canker is the most destructive disease of durian"));
    assert_eq!(browser.text("#answer").await, answer);
    // The answer came as `token` events of attempt 1, before the final event.
    let streamed = browser
        .eval("return JSON.parse(sessionStorage.getItem('bounded-rag.run')).attempts['1']")
        .await;
    assert_eq!(streamed, answer);
    assert_eq!(
        browser.text("#run-status").await,
        format!("Run {}: completed", run["run_id"].as_str().unwrap())
    );
    let citations: Vec<String> = run["citations"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, c)| format!("[{}] {}", i + 1, c["title"].as_str().unwrap()))
        .collect();
    assert_eq!(
        citations,
        [
            "[1] Patch canker (Phytophthora palmivora)",
            "[2] Phytophthora palmivora — causes — Patch canker",
            "[3] Patch canker"
        ]
    );
    assert_eq!(browser.texts("#citations summary").await, citations);
    // A citation opens to its source.
    click(&browser, "#citations li:first-child summary").await;
    assert_eq!(
        browser.text("#citations li:first-child .source").await,
        "kb://patch-canker.md#1"
    );
    // ... and shows the passage's text, as the run's checkpoint holds it.
    let passages = get_json(&format!(
        "{}playground/runs/{}/passages",
        serve.url,
        run["run_id"].as_str().unwrap()
    ))
    .await;
    let first = passages["passages"][0]["text"].as_str().unwrap();
    assert!(first.starts_with("Patch canker is the most destructive disease of durian"));
    assert_eq!(passages["passages"].as_array().unwrap().len(), 3);
    let shown = browser.text("#citations li:first-child .passage").await;
    assert_eq!(
        shown.split_whitespace().collect::<Vec<_>>(),
        first.split_whitespace().collect::<Vec<_>>()
    );
    // The timeline: every step in order, the fork's branches side by side, no limit.
    assert_eq!(names(&run), STEPS);
    assert_eq!(
        browser.attrs("#timeline [data-step]", "data-step").await,
        STEPS
    );
    assert_eq!(
        browser
            .attrs("#timeline [data-fork] [data-step]", "data-step")
            .await,
        ["route_question", "grade_documents", "generate"]
    );
    assert_eq!(
        browser.attrs("#timeline [data-limit]", "data-limit").await,
        Vec::<String>::new()
    );
    assert_eq!(
        browser.attr("#limit", "hidden").await.as_deref(),
        Some("true")
    );
    // The graph highlights this run's path: start, its six nodes, the fork, end.
    let visited = browser.attrs("#graph .node.visited", "data-node").await;
    let mut expected: Vec<&str> = STEPS.to_vec();
    expected.extend(["start", "speculate", "end"]);
    expected.sort_unstable();
    let mut visited_sorted = visited.clone();
    visited_sorted.sort_unstable();
    assert_eq!(visited_sorted, expected);
    browser.screenshot("playground-completed.png").await;

    // A run over its token budget ends best_effort, and the page names the limit.
    ask(&browser, &serve.url, QUESTION, "&max_tokens=600").await;
    browser.wait_for_state("done").await;
    let run = api_run(&serve, &browser).await;
    assert_eq!(run["status"], "best_effort");
    assert_eq!(
        run["metadata"]["limits_hit"],
        serde_json::json!(["token_budget"])
    );
    assert!(browser.text("#run-status").await.ends_with(": best_effort"));
    assert_eq!(
        browser.text("#limit").await,
        "best_effort: stopped by token_budget (the run's token budget could not cover the next step)"
    );
    assert_eq!(
        browser.attrs("#timeline [data-limit]", "data-limit").await,
        ["token_budget"]
    );
    assert_eq!(
        browser.attrs("#timeline [data-step]", "data-step").await,
        names(&run)
    );
    browser.screenshot("playground-best-effort.png").await;

    // A thread's turn: the sidebar lists the thread, and every run with its status as the API
    // lists them (newest first).
    ask(&browser, &serve.url, QUESTION, "&thread=chat-1").await;
    browser.wait_for_state("done").await;
    let wait = || browser.client.wait().at_most(browser::WAIT);
    wait()
        .for_element(Locator::Css("#threads button"))
        .await
        .unwrap();
    assert_eq!(browser.texts("#threads button").await, ["chat-1 (1 turns)"]);
    wait()
        .for_element(Locator::Css("#runs li[data-run]:nth-child(3)"))
        .await
        .unwrap();
    let listed = get_json(&format!("{}workflow/runs?limit=20", serve.url)).await;
    let expected: Vec<String> = listed["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let id = r["run_id"].as_str().unwrap();
            format!("{} {}", &id[..8], r["status"].as_str().unwrap())
        })
        .collect();
    assert_eq!(expected.len(), 3);
    assert_eq!(expected[1].split(' ').nth(1), Some("best_effort"));
    // (Each list item is a flex row: its button and its status come as two lines of text.)
    let shown: Vec<String> = browser
        .texts("#runs li[data-run]")
        .await
        .iter()
        .map(|t| t.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(shown, expected);
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stream_is_picked_back_up_after_its_last_event() {
    let serve = Serve::start(&[]);
    let proxy = proxy::CutProxy::start(serve.authority()).await;
    let browser = Browser::start().await;
    ask(&browser, &proxy.url, QUESTION, "").await;
    browser.wait_for_state("done").await;
    let run = api_run(&serve, &browser).await;
    let run_id = run["run_id"].as_str().unwrap();
    // Cut after event 1; the page asked for the events after it, once, and showed the rest.
    let seen = proxy.seen();
    let resumed: Vec<&String> = seen.iter().filter(|l| l.contains("/events")).collect();
    assert_eq!(resumed.len(), 1, "{seen:?}");
    assert!(resumed[0].starts_with(&format!("GET /workflow/runs/{run_id}/events ")));
    let ids: Vec<&String> = seen
        .iter()
        .filter(|l| l.to_ascii_lowercase().starts_with("last-event-id:"))
        .collect();
    assert_eq!(ids.len(), 1, "{seen:?}");
    assert_eq!(ids[0].split(':').nth(1).unwrap().trim(), "1");
    assert_eq!(run["status"], "completed");
    assert_eq!(
        browser.attrs("#timeline [data-step]", "data-step").await,
        STEPS
    );
    assert_eq!(
        browser.text("#answer").await,
        run["answer"].as_str().unwrap()
    );
    assert_eq!(
        browser.attr("#notice", "hidden").await.as_deref(),
        Some("true")
    );
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stopped_is_named_on_the_page() {
    let mut serve = Serve::start(&[]);
    let browser = Browser::start().await;
    browser.client.goto(&serve.url).await.unwrap();
    browser.wait_for_state("idle").await;
    serve.stop();
    let question = browser.client.find(Locator::Id("question")).await.unwrap();
    question.send_keys(QUESTION).await.unwrap();
    browser
        .client
        .find(Locator::Id("ask-button"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    browser.wait_for_state("error").await;
    let notice = browser.text("#notice").await;
    assert!(
        notice.starts_with("Cannot reach the bounded-rag server at http://127.0.0.1:"),
        "{notice}"
    );
    assert!(notice.contains("the question was not sent"), "{notice}");
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discarded_answer_is_struck_through_and_marked_in_the_timeline() {
    let serve = Serve::start(&[]);
    let browser = Browser::start().await;
    // Offline, grading keeps 1 of the 3 passages found for this question: the speculative
    // answer (attempt 1) is discarded and a second one is written from the kept passage.
    ask(
        &browser,
        &serve.url,
        "How do I grow mangoes in Iceland?",
        "",
    )
    .await;
    browser.wait_for_state("done").await;
    let run = api_run(&serve, &browser).await;
    assert_eq!(run["status"], "completed");
    assert_eq!(run["metadata"]["speculation"]["discarded"], 1);
    let streamed = browser
        .eval("return JSON.parse(sessionStorage.getItem('bounded-rag.run')).attempts")
        .await;
    let discarded = browser.texts("#discarded li").await;
    assert_eq!(
        discarded,
        [format!(
            "Answer 1 (discarded): {}",
            streamed["1"].as_str().unwrap()
        )]
    );
    assert_eq!(streamed["2"], run["answer"]);
    assert_eq!(
        browser.text("#answer").await,
        run["answer"].as_str().unwrap()
    );
    assert_eq!(
        browser.attrs("#timeline [data-step]", "data-step").await,
        names(&run)
    );
    // The fork's answer is marked discarded; the second answer is not.
    let marks = browser
        .eval(
            "return [...document.querySelectorAll('#timeline [data-step=generate]')]
                .map((row) => row.querySelector('.mark.bad') ? row.querySelector('.mark.bad').textContent : '')",
        )
        .await;
    assert_eq!(marks, serde_json::json!(["answer discarded", ""]));
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_request_is_explained_on_the_page() {
    let serve = Serve::start(&[]);
    let browser = Browser::start().await;
    // Checked on the page: a filter that is not KEY=VALUE is never sent.
    ask(&browser, &serve.url, QUESTION, "&filters=durian").await;
    let notice = browser.client.wait().at_most(browser::WAIT);
    notice
        .for_element(Locator::Css("#notice:not([hidden])"))
        .await
        .unwrap();
    assert_eq!(
        browser.text("#notice").await,
        "The filter \"durian\" is not KEY=VALUE (e.g. product=durian)."
    );
    // Refused by the server before the run starts: its status and message are shown.
    ask(&browser, &serve.url, QUESTION, "&thread=not%20an%20id").await;
    browser.wait_for_state("error").await;
    let shown = browser.text("#notice").await;
    assert!(
        shown.starts_with("The server refused the question (HTTP 400): thread_id "),
        "{shown}"
    );
    let listed = get_json(&format!("{}workflow/runs", serve.url)).await;
    assert_eq!(listed["runs"], serde_json::json!([]));
    browser.close().await;
}

/// WebDriver key codes.
const TAB: &str = "\u{E004}";
const ENTER: &str = "\u{E007}";
const CONTROL: &str = "\u{E009}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_labelled_and_works_with_the_keyboard_alone() {
    let serve = Serve::start(&[]);
    let browser = Browser::start().await;
    browser.client.goto(&serve.url).await.unwrap();
    browser.wait_for_state("idle").await;
    // Every control has a label; every button says what it does.
    let unlabelled = browser
        .eval(
            "return [...document.querySelectorAll('input, select, textarea')]
                .filter((e) => !e.labels || e.labels.length === 0).map((e) => e.id)",
        )
        .await;
    assert_eq!(unlabelled, serde_json::json!([]));
    let mute = browser
        .eval(
            "return [...document.querySelectorAll('button')]
                .filter((b) => !b.textContent.trim()).length",
        )
        .await;
    assert_eq!(mute, 0);
    // Tab reaches the skip link first; Enter on it puts the focus in the question.
    let body = browser.client.find(Locator::Css("body")).await.unwrap();
    body.send_keys(TAB).await.unwrap();
    let focused = browser.client.active_element().await.unwrap();
    assert_eq!(
        focused.attr("class").await.unwrap().as_deref(),
        Some("skip")
    );
    focused.send_keys(ENTER).await.unwrap();
    let focused = browser.client.active_element().await.unwrap();
    assert_eq!(
        focused.attr("id").await.unwrap().as_deref(),
        Some("question")
    );
    // Typing and Ctrl+Enter ask; the run completes with the offline path's six steps.
    focused
        .send_keys(&format!("{QUESTION}{CONTROL}{ENTER}"))
        .await
        .unwrap();
    browser.wait_for_state("done").await;
    assert!(browser.text("#run-status").await.ends_with(": completed"));
    assert_eq!(
        browser.attrs("#timeline [data-step]", "data-step").await,
        STEPS
    );
    // Tab onwards from the question walks the form's controls in order (the cancel button
    // is disabled once the run ended, so it is skipped).
    let mut order = Vec::new();
    for _ in 0..6 {
        let active = browser.client.active_element().await.unwrap();
        active.send_keys(TAB).await.unwrap();
        let next = browser.client.active_element().await.unwrap();
        order.push(next.attr("id").await.unwrap().unwrap_or_default());
    }
    assert_eq!(
        order,
        [
            "mode",
            "filters",
            "thread",
            "max-tokens",
            "speculation",
            "ask-button"
        ]
    );
    browser.close().await;
}
