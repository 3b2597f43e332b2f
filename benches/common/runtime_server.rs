//! A minimal Lambda Runtime API on loopback, shared by the benches (`#[path]` module): it hands
//! a list of events, one per `GET /2018-06-01/runtime/invocation/next`, to one function
//! process and reports what the process does, so a bench can time its start-up and read its
//! peak memory. The poll after the last event is never answered: the function is idle then,
//! and the bench kills it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// What the function process did, with when it arrived.
#[derive(Debug)]
pub enum Event {
    /// A poll that was handed an event.
    Poll(Instant),
    /// An invocation's response (`.../response`), its body.
    Response(Instant, String),
    /// Any other request (an invocation or init error): `METHOD PATH: BODY`.
    Error(String),
    /// A poll after the last event: the function is idle.
    Idle,
}

/// The server, running until [`RuntimeServer::stop`] (or the end of the bench process).
pub struct RuntimeServer {
    addr: SocketAddr,
    events: mpsc::Receiver<Event>,
    stop: Arc<AtomicBool>,
    accept: JoinHandle<()>,
}

type Queue = Arc<Mutex<std::iter::Enumerate<std::vec::IntoIter<String>>>>;

impl RuntimeServer {
    /// Listens on a loopback port and serves `events` to `function` (named in the ARN).
    pub fn start(function: &str, events: Vec<String>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = mpsc::channel();
        let queue: Queue = Arc::new(Mutex::new(events.into_iter().enumerate()));
        let stop = Arc::new(AtomicBool::new(false));
        let arn = format!("arn:aws:lambda:us-east-1:123456789012:function:{function}");
        let accept = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                // A thread per connection: the runtime client may open more than one.
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { break };
                    let (tx, queue, arn) = (tx.clone(), queue.clone(), arn.clone());
                    std::thread::spawn(move || connection(stream, &tx, &queue, &arn));
                }
            })
        };
        Self {
            addr,
            events: rx,
            stop,
            accept,
        }
    }

    /// `AWS_LAMBDA_RUNTIME_API` for the function: `127.0.0.1:PORT`.
    pub fn runtime_api(&self) -> String {
        self.addr.to_string()
    }

    /// What the function did, in order of arrival.
    pub fn events(&self) -> &mpsc::Receiver<Event> {
        &self.events
    }

    /// Stops accepting connections and waits for the accept loop to end.
    pub fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the stop flag.
        let _ = TcpStream::connect(self.addr);
        let _ = self.accept.join();
    }
}

/// Serves requests on one connection until it closes or the function is idle again.
fn connection(stream: TcpStream, tx: &mpsc::Sender<Event>, queue: &Queue, arn: &str) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut writer = stream;
    while let Some((method, path, body)) = request(&mut reader) {
        let at = Instant::now();
        if method == "GET" && path == "/2018-06-01/runtime/invocation/next" {
            let next = queue.lock().unwrap().next();
            let Some((n, event)) = next else {
                let _ = tx.send(Event::Idle);
                return; // never answered: the function is killed now
            };
            let _ = tx.send(Event::Poll(at));
            let deadline = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_millis()
                + 30_000;
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                 Lambda-Runtime-Aws-Request-Id: bench-request-{}\r\n\
                 Lambda-Runtime-Deadline-Ms: {deadline}\r\n\
                 Lambda-Runtime-Invoked-Function-Arn: {arn}\r\n\
                 Lambda-Runtime-Trace-Id: Root=1-00000000-000000000000000000000000;Sampled=0\r\n\
                 Content-Length: {}\r\n\r\n",
                n + 1,
                event.len()
            );
            if writer.write_all(head.as_bytes()).is_err()
                || writer.write_all(event.as_bytes()).is_err()
            {
                return;
            }
        } else {
            let _ = tx.send(if path.ends_with("/response") {
                Event::Response(at, body)
            } else {
                Event::Error(format!("{method} {path}: {body}"))
            });
            let _ = writer.write_all(
                b"HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: 16\r\n\r\n{\"status\":\"OK\"}",
            );
        }
    }
}

/// Reads one HTTP/1.1 request (Content-Length bodies or chunked); `None` at EOF.
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
