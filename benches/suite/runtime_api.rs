//! A function binary's cold start, timed against the benches' minimal Lambda Runtime API
//! (`benches/common/runtime_server.rs`).
//!
//! The binary is started with `AWS_LAMBDA_RUNTIME_API` pointing there and the offline provider,
//! no AWS service configured. The server timestamps the first
//! `GET /2018-06-01/runtime/invocation/next` (cold start: process start to first poll), hands
//! out one event, timestamps the function's `.../response` (first answer), and when the next
//! poll arrives (the function is idle again) the process is killed and reaped for its peak RSS.

use super::process::{self, reap, Reaped};
use super::runtime_server::{Event, RuntimeServer};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How long one cold start may take before the run is abandoned.
const LIMIT: Duration = Duration::from_secs(20);

/// One cold start of a function binary.
#[derive(Debug, Clone, Copy)]
pub struct LambdaRun {
    /// Process start to the first `invocation/next` poll.
    pub to_first_poll: Duration,
    /// Process start to the first invocation's response being posted.
    pub to_first_response: Duration,
    /// Peak RSS over start-up and one invocation, KiB.
    pub max_rss_kib: u64,
}

/// Starts `bin` against a fresh runtime server, serves it `event`, and measures.
pub fn lambda_once(bin: &Path, function: &str, event: &str, state_dir: &Path) -> LambdaRun {
    lambda_once_with(bin, function, event, state_dir, &[])
}

/// [`lambda_once`] with more environment variables (`env`, as `NAME`, `VALUE`).
pub fn lambda_once_with(
    bin: &Path,
    function: &str,
    event: &str,
    state_dir: &Path,
    env: &[(String, String)],
) -> LambdaRun {
    let server = RuntimeServer::start(function, vec![event.to_owned()]);
    let started = Instant::now();
    let mut child = process::offline(bin, state_dir)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("AWS_LAMBDA_RUNTIME_API", server.runtime_api())
        .env("AWS_LAMBDA_FUNCTION_NAME", function)
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the function binary");

    let mut first_poll = None;
    let mut response = None;
    let outcome = loop {
        let left = LIMIT.saturating_sub(started.elapsed());
        match server.events().recv_timeout(left) {
            Ok(Event::Poll(at)) => first_poll = Some(at),
            Ok(Event::Response(at, body)) => response = Some((at, body)),
            Ok(Event::Idle) => break Ok(()),
            Ok(Event::Error(body)) => break Err(format!("the function reported an error: {body}")),
            Err(_) => break Err(format!("no answer within {LIMIT:?}")),
        }
    };
    let _ = child.kill();
    let Reaped { max_rss_kib, .. } = reap(&child).expect("reap the function");
    server.stop();
    if let Err(why) = outcome {
        panic!("{function}: {why}");
    }
    let first_poll = first_poll.expect("first poll");
    let (responded, body) = response.expect("a response");
    check_response(function, &body);
    LambdaRun {
        to_first_poll: first_poll - started,
        to_first_response: responded - started,
        max_rss_kib,
    }
}

/// The answer must be a real one: a 200 with an answer for `api`, no failed record for `worker`.
fn check_response(function: &str, body: &str) {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let ok = match function {
        "api" => {
            v["statusCode"] == 200
                && v["body"]
                    .as_str()
                    .and_then(|b| serde_json::from_str::<serde_json::Value>(b).ok())
                    .is_some_and(|b| b["success"] == true)
        }
        _ => v["batchItemFailures"]
            .as_array()
            .is_some_and(|failures| failures.is_empty()),
    };
    assert!(ok, "{function}: unexpected response {body}");
}
