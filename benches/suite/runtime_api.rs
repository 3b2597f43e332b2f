//! A minimal Lambda Runtime API on loopback, to time a function binary's cold start.
//!
//! The binary is started with `AWS_LAMBDA_RUNTIME_API` pointing here and the offline provider,
//! no AWS service configured. The server timestamps the first
//! `GET /2018-06-01/runtime/invocation/next` (cold start: process start to first poll), hands
//! out one event, timestamps the function's `.../response` (first answer), and when the next
//! poll arrives (the function is idle again) the process is killed and reaped for its peak RSS.

use super::process::{self, reap, Reaped};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

#[derive(Debug)]
enum Event {
    FirstPoll(Instant),
    Response(Instant, String),
    Error(String),
    Idle,
}

/// Starts `bin` against a fresh runtime server, serves it `event`, and measures.
pub fn lambda_once(bin: &Path, function: &str, event: &str, state_dir: &Path) -> LambdaRun {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    let event = event.to_owned();
    let stop = Arc::new(AtomicBool::new(false));
    let served = Arc::new(AtomicBool::new(false));
    let server = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            // A thread per connection: the runtime client may open more than one.
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { break };
                let (tx, event, served) = (tx.clone(), event.clone(), served.clone());
                std::thread::spawn(move || serve_connection(stream, &tx, &event, &served));
            }
        })
    };

    let started = Instant::now();
    let mut child = process::offline(bin, state_dir)
        .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
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
        match rx.recv_timeout(left) {
            Ok(Event::FirstPoll(at)) => first_poll = Some(at),
            Ok(Event::Response(at, body)) => response = Some((at, body)),
            Ok(Event::Idle) => break Ok(()),
            Ok(Event::Error(body)) => break Err(format!("the function reported an error: {body}")),
            Err(_) => break Err(format!("no answer within {LIMIT:?}")),
        }
    };
    let _ = child.kill();
    let Reaped { max_rss_kib, .. } = reap(&child).expect("reap the function");
    // Wake the accept loop so it sees the stop flag.
    stop.store(true, Ordering::SeqCst);
    let _ = TcpStream::connect(addr);
    let _ = server.join();
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

/// Serves requests on one connection until it closes or the function is idle again.
fn serve_connection(stream: TcpStream, tx: &mpsc::Sender<Event>, event: &str, served: &AtomicBool) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut writer = stream;
    loop {
        let Some((method, path, body)) = read_request(&mut reader) else {
            return;
        };
        let at = Instant::now();
        match (method.as_str(), path.as_str()) {
            ("GET", "/2018-06-01/runtime/invocation/next")
                if !served.swap(true, Ordering::SeqCst) =>
            {
                let _ = tx.send(Event::FirstPoll(at));
                let deadline = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_millis()
                    + 30_000;
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                     Lambda-Runtime-Aws-Request-Id: bench-request-1\r\n\
                     Lambda-Runtime-Deadline-Ms: {deadline}\r\n\
                     Lambda-Runtime-Invoked-Function-Arn: arn:aws:lambda:us-east-1:123456789012:function:bench\r\n\
                     Lambda-Runtime-Trace-Id: Root=1-00000000-000000000000000000000000;Sampled=0\r\n\
                     Content-Length: {}\r\n\r\n",
                    event.len()
                );
                if writer.write_all(head.as_bytes()).is_err()
                    || writer.write_all(event.as_bytes()).is_err()
                {
                    return;
                }
            }
            ("GET", "/2018-06-01/runtime/invocation/next") => {
                let _ = tx.send(Event::Idle);
                return; // never answered: the function is killed now
            }
            ("POST", p) if p.ends_with("/response") => {
                let _ = tx.send(Event::Response(at, body));
                let _ = writer.write_all(
                    b"HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n{\"status\":\"OK\"}",
                );
            }
            _ => {
                let _ = tx.send(Event::Error(format!("{method} {path}: {body}")));
                let _ = writer.write_all(
                    b"HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n{\"status\":\"OK\"}",
                );
            }
        }
    }
}

/// Reads one HTTP/1.1 request (Content-Length bodies or chunked); `None` at EOF.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<(String, String, String)> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().ok()?;
        } else if name.eq_ignore_ascii_case("transfer-encoding")
            && value.eq_ignore_ascii_case("chunked")
        {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0u8; size + 2]; // data + CRLF
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        body.resize(length, 0);
        reader.read_exact(&mut body).ok()?;
    }
    Some((method, path, String::from_utf8_lossy(&body).into_owned()))
}
