//! `bounded-rag serve --remote URL` in front of a stand-in for a deployed stack that checks
//! SigV4 signatures ([`SigningServer`], itself in front of a real `bounded-rag serve`): the page
//! names the stack and is never sent on, a run, its events and its status go through with
//! every request signed for `lambda` in the test region, wrong credentials get the stack's 403
//! passed to the page as one clear error, and a stack that cannot be reached is named too.

use crate::playground::server::Serve;
use crate::playground::signing::{self, SigningServer};

use serde_json::Value;

const QUESTION: &str = r#"{"question":"What causes patch canker in durian?"}"#;

fn http() -> reqwest::Client {
    bounded_rag::tls::reqwest_builder().build().unwrap()
}

/// `serve --remote URL --remote-service lambda`, signing with `secret`.
fn remote(url: &str, secret: &'static str) -> Serve {
    Serve::start_with(
        &signing::credentials_env(secret),
        &["--remote", url, "--remote-service", "lambda"],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_and_its_status_go_through_the_stack_each_request_signed() {
    let api = Serve::start(&[]);
    let stack = SigningServer::start(&api.url).await;
    let local = remote(&stack.url, signing::SECRET_KEY);
    let stack_url = stack.url.trim_end_matches('/');
    assert_eq!(
        local.banner[2],
        format!(
            "bounded-rag: every API call goes to the deployed stack at {stack_url}, signed with \
             SigV4 (lambda, eu-west-1) by this process"
        )
    );

    // The page is this server's own, and names the stack.
    let page = http()
        .get(&local.url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains(&format!(
        "data-remote=\"{stack_url}\">Stack: the deployed stack at <code>{stack_url}</code>"
    )));

    // A run as JSON, then its status, then a run as events.
    let response = http()
        .post(format!("{}workflow/run", local.url))
        .body(QUESTION)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let run: Value = response.json().await.unwrap();
    assert_eq!(run["status"], "completed");
    let run_id = run["run_id"].as_str().unwrap();
    let status: Value = http()
        .get(format!("{}workflow/runs/{run_id}", local.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (&status["status"], &status["answer"]),
        (&run["status"], &run["answer"])
    );
    let response = http()
        .post(format!("{}workflow/run", local.url))
        .header("accept", "text/event-stream")
        .body(QUESTION)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let streamed_id = response.headers()["x-run-id"].to_str().unwrap().to_owned();
    let events = response.text().await.unwrap();
    let last = events.trim_end().rsplit("\n\n").next().unwrap();
    assert!(last.starts_with("id: 6.end\nevent: final\n"), "{last}");

    // Three requests reached the stack, each signed; the page was never sent on.
    assert_eq!(
        stack.signed(),
        [
            "POST /workflow/run".to_owned(),
            format!("GET /workflow/runs/{run_id}"),
            "POST /workflow/run".to_owned(),
        ]
    );
    assert_eq!(stack.refused(), Vec::<String>::new());
    // ... and the runs are the stack's.
    let listed: Value = http()
        .get(format!("{}workflow/runs", api.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut ids: Vec<&str> = listed["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    let mut expected = vec![run_id, streamed_id.as_str()];
    expected.sort_unstable();
    assert_eq!(ids, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_signature_is_one_clear_error_naming_the_stack() {
    let api = Serve::start(&[]);
    let stack = SigningServer::start(&api.url).await;
    // No signature at all: the stack refuses it.
    let response = http()
        .post(format!("{}workflow/run", stack.url))
        .body(QUESTION)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["message"], "Forbidden");

    // A signature made with the wrong secret: refused, and said so.
    let wrong = "not-the-secret-key-of-this-access-key-id";
    let local = remote(&stack.url, wrong);
    let response = http()
        .post(format!("{}workflow/run", local.url))
        .body(QUESTION)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let text = response.text().await.unwrap();
    assert!(
        !text.contains(wrong) && !text.contains("Signature="),
        "{text}"
    );
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["error"], "remote_refused");
    let stack_url = stack.url.trim_end_matches('/');
    assert_eq!(
        body["message"],
        format!(
            "The deployed stack at {stack_url} refused the signed request (HTTP 403: {}). Check \
             the AWS credentials `bounded-rag serve --remote` signs with (AWS_PROFILE, their \
             expiry, their permission to invoke the stack) and the signing service and region \
             (lambda, eu-west-1).",
            signing::MISMATCH
        )
    );
    assert_eq!(
        stack.refused(),
        ["POST /workflow/run", "POST /workflow/run"]
    );
    assert_eq!(stack.signed(), Vec::<String>::new());
    let listed: Value = http()
        .get(format!("{}workflow/runs", api.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["runs"], serde_json::json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stack_that_cannot_be_reached_is_named() {
    // A loopback port nothing listens on any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let stack_url = format!("http://127.0.0.1:{port}");
    let local = remote(&stack_url, signing::SECRET_KEY);
    let response = http()
        .get(format!("{}workflow/runs", local.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 502);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "remote_unreachable");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("Cannot reach the deployed stack at {stack_url}: ")),
        "{message}"
    );
}

#[test]
fn serve_remote_without_credentials_or_with_a_bad_url_stops_before_listening() {
    let state = tempfile::tempdir().unwrap();
    let run = |env: &[(&str, &str)], url: &str| {
        crate::support::bin::run(
            state.path(),
            &[],
            env,
            &["serve", "--port", "0", "--remote", url],
        )
    };
    let out = run(
        &[
            ("AWS_REGION", "eu-west-1"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ],
        "https://abc123.lambda-url.eu-west-1.on.aws/",
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "no AWS credentials to sign requests to https://abc123.lambda-url.eu-west-1.on.aws with"
        ),
        "{stderr}"
    );
    let out = run(
        &signing::credentials_env(signing::SECRET_KEY),
        "http://rag.example.com/",
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--remote http://rag.example.com/ must be https"),
        "{stderr}"
    );
}
