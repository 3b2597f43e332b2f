//! A minimal Lambda Runtime API on loopback that serves a list of events to one function
//! process, then reads its peak RSS and kills it at its next poll.
//!
//! The peak is the process's own `VmHWM` (`/proc/PID/status`), read while it waits for the next
//! event. Not `wait4(2)`'s `ru_maxrss`: Linux folds the parent's RSS at the moment of `exec`
//! into the child's `ru_maxrss`, and this benchmark's own process holds the whole corpus.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What one function process did.
pub struct Served {
    /// Process start to its first poll (init, including the knowledge-base load).
    pub to_first_poll: Duration,
    /// Responses, in order.
    pub responses: Vec<String>,
    /// Peak RSS (`VmHWM`), KiB.
    pub max_rss_kib: u64,
}

enum Event {
    Poll(Instant),
    Response(String),
    Idle,
}

/// Starts `cmd` (its environment set by the caller) against a runtime API that hands out
/// `events` one by one.
pub fn serve(mut cmd: Command, events: Vec<String>, limit: Duration) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    let queue = Arc::new(Mutex::new(events.into_iter().enumerate()));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { break };
            let (tx, queue) = (tx.clone(), queue.clone());
            std::thread::spawn(move || connection(stream, &tx, &queue));
        }
    });
    let started = Instant::now();
    // Reaped with wait4(2) in `kill`, which also reads the peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = cmd
        .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", "api")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512")
        .spawn()
        .expect("spawn the function");
    let mut first = None;
    let mut responses = Vec::new();
    loop {
        match rx.recv_timeout(limit.saturating_sub(started.elapsed())) {
            Ok(Event::Poll(at)) => {
                first.get_or_insert(at);
            }
            Ok(Event::Response(body)) => responses.push(body),
            Ok(Event::Idle) => break,
            Err(_) => {
                kill(&child);
                panic!("the function did not finish within {limit:?}");
            }
        }
    }
    let max_rss_kib = high_water_kib(child.id()).expect("the function's /proc status");
    kill(&child);
    Served {
        to_first_poll: first.expect("a poll") - started,
        responses,
        max_rss_kib,
    }
}

/// `VmHWM` of a live process, KiB.
fn high_water_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn kill(child: &Child) {
    let pid = child.id() as libc::pid_t;
    // SAFETY: signalling and reaping our own child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let mut status = 0;
    // SAFETY: rusage is plain old data; valid pointers to locals.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
}

type Queue = Arc<Mutex<std::iter::Enumerate<std::vec::IntoIter<String>>>>;

fn connection(stream: TcpStream, tx: &mpsc::Sender<Event>, queue: &Queue) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut writer = stream;
    while let Some((method, path, body)) = request(&mut reader) {
        let at = Instant::now();
        if method == "GET" && path == "/2018-06-01/runtime/invocation/next" {
            let _ = tx.send(Event::Poll(at));
            let next = queue.lock().unwrap().next();
            let Some((n, event)) = next else {
                let _ = tx.send(Event::Idle);
                return;
            };
            let deadline = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_millis()
                + 30_000;
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                 Lambda-Runtime-Aws-Request-Id: kb-bench-{n}\r\n\
                 Lambda-Runtime-Deadline-Ms: {deadline}\r\n\
                 Lambda-Runtime-Invoked-Function-Arn: arn:aws:lambda:us-east-1:123456789012:function:api\r\n\
                 Content-Length: {}\r\n\r\n",
                event.len()
            );
            if writer.write_all(head.as_bytes()).is_err()
                || writer.write_all(event.as_bytes()).is_err()
            {
                return;
            }
        } else {
            if path.ends_with("/response") {
                let _ = tx.send(Event::Response(body));
            } else {
                eprintln!("kb bench: the function reported {method} {path}: {body}");
            }
            let _ = writer.write_all(
                b"HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n{\"status\":\"OK\"}",
            );
        }
    }
}

fn request(reader: &mut BufReader<TcpStream>) -> Option<(String, String, String)> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let (mut length, mut chunked) = (0usize, false);
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
        if name.eq_ignore_ascii_case("content-length") {
            length = value.trim().parse().ok()?;
        } else if name.eq_ignore_ascii_case("transfer-encoding") && value.trim() == "chunked" {
            chunked = true;
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0u8; size + 2];
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
