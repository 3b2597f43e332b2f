//! The scripted OpenAI-compatible server of the benchmarks, run as its own process so its CPU is
//! not the client's: `suite serve-llm --delay-ms D` prints `listening PORT` and serves until its
//! stdin closes (the parent holds the pipe, so the server never outlives the suite).
//!
//! Same replies as `tests/support/llm_server.rs`'s `Script::defaults()` (route to the knowledge
//! base, every grade `yes`), each after a fixed delay. The model name selects a scenario:
//! `bench-ungrounded` answers `no` to every groundedness check (3 regenerations, then
//! best-effort), which gives the long run of the checkpoint measurements.
//!
//! Every reply reports `usage` of 100 prompt and 10 completion tokens, like the test server's
//! default.
//!
//! **Streams.** A request with `"stream": true` is answered as the test server
//! (`tests/support/llm_server.rs`) answers it: `text/event-stream`, a first chunk with the
//! assistant role and empty content, the content in chunks of 8 characters, a chunk with
//! `finish_reason` `stop`, a chunk with `"choices": []` and `usage` when
//! `stream_options.include_usage` is true, then `data: [DONE]`. The delay comes before the first
//! byte (the status line); the chunks follow at once.
//!
//! `GET /stats` returns `{"requests", "streamed", "busy_us"}`: chat requests served, how many
//! of them asked for a stream, and the server's own time, the union of the intervals during
//! which at least one chat request was being served (delay included; a stream until its last
//! chunk is handed to the connection). The client's overhead is its wall time minus this.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::StreamExt;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Busy-time accounting shared by the handlers.
struct Busy {
    inflight: u32,
    since: Instant,
    busy: Duration,
    requests: u64,
    streamed: u64,
}

struct Shared {
    delay: Duration,
    busy: Mutex<Busy>,
}

impl Shared {
    fn enter(&self) {
        let mut b = self.busy.lock().unwrap();
        if b.inflight == 0 {
            b.since = Instant::now();
        }
        b.inflight += 1;
        b.requests += 1;
    }

    fn exit(&self) {
        let mut b = self.busy.lock().unwrap();
        b.inflight -= 1;
        if b.inflight == 0 {
            let elapsed = b.since.elapsed();
            b.busy += elapsed;
        }
    }
}

/// Characters per streamed content chunk (as the test server's default).
const CHUNK_CHARS: usize = 8;
/// `usage` of every reply: (prompt, completion) tokens, as the test server's default.
const USAGE: (u64, u64) = (100, 10);

/// Leaves the busy interval when dropped: at the end of the handler, or of a streamed body
/// (also when the client goes away mid-stream).
struct InHandler(Arc<Shared>);

impl InHandler {
    fn enter(shared: &Arc<Shared>) -> Self {
        shared.enter();
        Self(Arc::clone(shared))
    }
}

impl Drop for InHandler {
    fn drop(&mut self) {
        self.0.exit();
    }
}

/// Serves on `127.0.0.1:0` until stdin closes. Entry point of `suite serve-llm`.
pub fn serve(delay: Duration) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("server runtime");
    rt.block_on(async move {
        let shared = Arc::new(Shared {
            delay,
            busy: Mutex::new(Busy {
                inflight: 0,
                since: Instant::now(),
                busy: Duration::ZERO,
                requests: 0,
                streamed: 0,
            }),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .route("/stats", get(stats))
            .with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        println!("listening {}", listener.local_addr().unwrap().port());
        // Lifeline: stop when the parent closes our stdin (or dies).
        let stdin_closed = tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut sink);
        });
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stdin_closed.await;
            })
            .await
            .expect("serve");
    });
}

async fn stats(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let b = shared.busy.lock().unwrap();
    let mut busy = b.busy;
    if b.inflight > 0 {
        busy += b.since.elapsed();
    }
    Json(json!({
        "requests": b.requests,
        "streamed": b.streamed,
        "busy_us": busy.as_micros() as u64
    }))
}

async fn complete(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let guard = InHandler::enter(&shared);
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let name = request["response_format"]["json_schema"]["name"]
        .as_str()
        .unwrap_or("");
    let model = request["model"].as_str().unwrap_or("bench");
    let content = match name {
        "route_query" => json!({"data_source": "kg_retrieval"}),
        "grade_hallucinations" if model == "bench-ungrounded" => json!({"binary_score": "no"}),
        "grade_documents" | "grade_hallucinations" | "grade_answer" => {
            json!({"binary_score": "yes"})
        }
        "refine_query" => json!({"refined_question": "durian patch canker cause Phytophthora"}),
        // `generate_answer` asks for plain text, not JSON.
        _ => Value::String(
            "Phytophthora palmivora causes patch canker on the durian trunk [1].".into(),
        ),
    };
    let content = match content {
        Value::String(text) => text,
        structured => structured.to_string(),
    };
    if !shared.delay.is_zero() {
        tokio::time::sleep(shared.delay).await;
    }
    let (prompt, completion) = USAGE;
    let usage = json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion
    });
    if request["stream"] == true {
        shared.busy.lock().unwrap().streamed += 1;
        let include_usage = request["stream_options"]["include_usage"] == true;
        let frames = stream_frames(&content, model, include_usage.then_some(usage));
        // The guard moves into the body: the request is served until its last chunk is out.
        let body = futures::stream::iter(frames).map(move |frame| {
            let _serving = &guard;
            Ok::<_, std::convert::Infallible>(frame)
        });
        return (
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            Body::from_stream(body),
        )
            .into_response();
    }
    Json(json!({
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop"
        }],
        "usage": usage
    }))
    .into_response()
}

/// The server-sent events of a streamed reply of `content`, as `tests/support/llm_server.rs`
/// sends them (without its pauses and cuts).
fn stream_frames(content: &str, model: &str, usage: Option<Value>) -> Vec<String> {
    let chunk = |choices: Value| {
        let chunk = json!({
            "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
            "model": model, "choices": choices
        });
        format!("data: {chunk}\n\n")
    };
    let mut frames = vec![chunk(
        json!([{"index": 0, "delta": {"role": "assistant", "content": ""}}]),
    )];
    let chars: Vec<char> = content.chars().collect();
    for piece in chars.chunks(CHUNK_CHARS) {
        let piece: String = piece.iter().collect();
        frames.push(chunk(
            json!([{"index": 0, "delta": {"content": piece}, "finish_reason": null}]),
        ));
    }
    frames.push(chunk(
        json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
    ));
    if let Some(usage) = usage {
        let last = json!({
            "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
            "model": model, "choices": [], "usage": usage
        });
        frames.push(format!("data: {last}\n\n"));
    }
    frames.push("data: [DONE]\n\n".to_owned());
    frames
}

/// Server-side counters at one moment.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    /// Chat requests served so far.
    pub requests: u64,
    /// Of those, the ones that asked for a stream.
    pub streamed: u64,
    /// The server's own time so far.
    pub busy: Duration,
}

impl std::ops::Sub for Stats {
    type Output = Stats;
    fn sub(self, earlier: Stats) -> Stats {
        Stats {
            requests: self.requests - earlier.requests,
            streamed: self.streamed - earlier.streamed,
            busy: self.busy.saturating_sub(earlier.busy),
        }
    }
}

/// A running server process; killed on drop.
pub struct LlmServer {
    child: Child,
    _lifeline: ChildStdin,
    port: u16,
    delay: Duration,
}

impl LlmServer {
    /// Starts `suite serve-llm` (this executable) with `delay` per reply.
    pub fn start(delay: Duration) -> Self {
        let exe = std::env::current_exe().expect("current exe");
        let mut child = Command::new(exe)
            .args(["serve-llm", "--delay-ms", &delay.as_millis().to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the scripted LLM server");
        let lifeline = child.stdin.take().expect("stdin");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("server announces its port");
        let port = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected server output {line:?}"));
        Self {
            child,
            _lifeline: lifeline,
            port,
            delay,
        }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The scripted delay of every reply.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// Current counters (a plain blocking HTTP/1.0 request, outside any timed section).
    pub fn stats(&self) -> Stats {
        use std::io::Write;
        let mut stream =
            std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect to stats");
        stream
            .write_all(b"GET /stats HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .expect("stats request");
        let mut reply = String::new();
        stream.read_to_string(&mut reply).expect("stats reply");
        let body = reply.split("\r\n\r\n").nth(1).unwrap_or("");
        let v: Value = serde_json::from_str(body).expect("stats JSON");
        Stats {
            requests: v["requests"].as_u64().unwrap_or(0),
            streamed: v["streamed"].as_u64().unwrap_or(0),
            busy: Duration::from_micros(v["busy_us"].as_u64().unwrap_or(0)),
        }
    }
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
