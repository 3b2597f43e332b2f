//! The playground of `bounded-rag serve --remote` in a real browser (headless Chromium through
//! chromedriver), in front of the stand-in for a deployed stack that checks SigV4 signatures
//! ([`SigningServer`], itself in front of a real `bounded-rag serve`): the page names the stack
//! and a run completes through it, every request signed; with the wrong credentials the page
//! says the stack refused them.

use crate::playground::browser::Browser;
use crate::playground::page::{ask, get_json};
use crate::playground::server::Serve;
use crate::playground::signing::{self, SigningServer};

use crate::support::happy_path::QUESTION;

/// `serve --remote URL --remote-service lambda`, signing with `secret`.
fn remote(url: &str, secret: &'static str) -> Serve {
    Serve::start_with(
        &signing::credentials_env(secret),
        &["--remote", url, "--remote-service", "lambda"],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_watches_a_deployed_stack_and_says_when_it_refuses() {
    let api = Serve::start(&[]);
    let stack = SigningServer::start(&api.url).await;
    let stack_url = stack.url.trim_end_matches('/');
    let local = remote(&stack.url, signing::SECRET_KEY);
    let browser = Browser::start().await;

    // The page names the stack, and a run completes through it.
    ask(&browser, &local.url, QUESTION, "").await;
    browser.wait_for_state("done").await;
    assert_eq!(
        browser.attr("#stack", "data-remote").await.as_deref(),
        Some(stack_url)
    );
    assert_eq!(
        browser.text("#stack").await,
        format!(
            "Stack: the deployed stack at {stack_url}. Every call is signed with SigV4 (lambda, \
             eu-west-1) by bounded-rag serve --remote; your AWS credentials stay with it."
        )
    );
    let run_id = browser
        .eval("return JSON.parse(sessionStorage.getItem('bounded-rag.run')).id")
        .await;
    let run_id = run_id.as_str().unwrap();
    let run = get_json(&format!("{}workflow/runs/{run_id}", api.url)).await;
    assert_eq!(run["status"], "completed");
    assert_eq!(
        browser.text("#run-status").await,
        format!("Run {run_id}: completed")
    );
    assert_eq!(
        browser.text("#answer").await,
        run["answer"].as_str().unwrap()
    );
    assert_eq!(
        browser.attr("#notice", "hidden").await.as_deref(),
        Some("true")
    );
    // Everything the page asked reached the stack signed: the run once, nothing refused.
    let signed = stack.signed();
    assert_eq!(
        signed.iter().filter(|l| *l == "POST /workflow/run").count(),
        1,
        "{signed:?}"
    );
    assert!(
        signed.contains(&"GET /workflow/runs?limit=20".to_owned()),
        "{signed:?}"
    );
    assert_eq!(stack.refused(), Vec::<String>::new());

    // With the wrong secret the stack refuses the signature, and the page says so.
    let wrong = remote(&stack.url, "not-the-secret-key-of-this-access-key-id");
    ask(&browser, &wrong.url, QUESTION, "").await;
    browser.wait_for_state("error").await;
    assert_eq!(
        browser.text("#notice").await,
        format!(
            "The deployed stack at {stack_url} refused the signed request (HTTP 403: {}). Check \
             the AWS credentials `bounded-rag serve --remote` signs with (AWS_PROFILE, their \
             expiry, their permission to invoke the stack) and the signing service and region \
             (lambda, eu-west-1).",
            signing::MISMATCH
        )
    );
    assert!(stack.refused().contains(&"POST /workflow/run".to_owned()));
    let listed = get_json(&format!("{}workflow/runs", api.url)).await;
    assert_eq!(listed["runs"].as_array().unwrap().len(), 1);
    browser.close().await;
}
