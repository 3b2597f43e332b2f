//! `cargo lambda watch` on loopback: the Lambda Runtime API emulator serving this crate's
//! function binaries (`api`, `worker`, `stream`, `sweeper`), one emulator per [`LambdaWatch`],
//! stopped on drop.
//!
//! `cargo-lambda` is looked up in `CARGO_LAMBDA_BIN`, then `.local/venv/bin/cargo-lambda` (what
//! `scripts/setup-test-tools.sh` installs), then `PATH`. Missing means the tests fail.
//!
//! Two ways to run the functions ([`Launch`]):
//! - [`Launch::Prebuilt`] (what [`LambdaWatch::start`] uses): `watch --only-lambda-apis`, and
//!   this harness starts the binaries `cargo test` just built (`CARGO_BIN_EXE_*`) against the
//!   emulator's per-function Runtime API (`/.rt/{function}`). Nothing is compiled at test time,
//!   so the tests exercise exactly the code under test even while the tree is being edited.
//! - [`Launch::CargoRun`]: plain `watch --ignore-changes --env-file`; on the first invocation of
//!   a function the emulator runs `cargo run --bin {function}`, which reuses `target/debug`
//!   (a no-op build when `cargo test` is current). This is the developer path of
//!   `scripts/local-stack.sh`; the first invocation may compile if sources changed since.
//!
//! Endpoints: `POST /2015-03-31/functions/{function}/invocations` (any event JSON, answered
//! with the function's JSON) and the function URL emulation `/lambda-url/{function}/{path}`
//! (the emulator builds the API Gateway v2 event; the function sees `{path}`).
//!
//! Lifetime: every process runs under a small `sh` wrapper whose stdin is a pipe held by this
//! harness. Dropping the [`LambdaWatch`], or the test process exiting however it exits, closes
//! the pipe; the wrapper then sends SIGTERM (SIGKILL after 5 s). On SIGTERM the emulator stops
//! the function processes it started: they run in sessions of their own, so a process-group
//! kill would miss them. Drop waits (bounded) for all of it and finally kills any process
//! still holding this emulator's Runtime API address in its environment (Linux `/proc`).
//! Output goes to a log file ([`LambdaWatch::logs`]), never to inherited pipes, so nothing
//! keeps `cargo test` waiting.

mod process;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

pub use process::{alive, processes_for};
use process::{find_binary, tail, try_start, Wrapped, FUNCTIONS};

/// How long the emulator may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Attempts with a fresh port if the chosen one is taken between probing and binding.
const START_ATTEMPTS: usize = 3;
/// Longest wait for one invocation of a prebuilt function.
const INVOKE_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest wait for one invocation when the emulator may first have to `cargo run` (compile).
const CARGO_RUN_INVOKE_TIMEOUT: Duration = Duration::from_secs(900);
/// Longest wait in drop for the processes to exit after the lifelines close.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Lines of log quoted in failure messages.
const LOG_TAIL: usize = 40;

/// How the emulator gets the function processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch {
    /// `--only-lambda-apis`; the harness starts the binaries `cargo test` built.
    Prebuilt,
    /// The emulator runs `cargo run --bin {function}` on first invocation (`--ignore-changes`).
    CargoRun,
}

/// A running `cargo lambda watch`.
pub struct LambdaWatch {
    launch: Launch,
    addr: SocketAddr,
    log: PathBuf,
    /// Emulator first, then the function processes (prebuilt mode).
    processes: Vec<Wrapped>,
    http: reqwest::Client,
}

/// An HTTP answer from the emulator.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Headers, names in lower case, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body as text.
    pub body: String,
}

impl HttpResponse {
    /// The body parsed as JSON; panics with the body when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| {
            panic!(
                "expected a JSON body ({e}), got HTTP {}: {}",
                self.status, self.body
            )
        })
    }

    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl LambdaWatch {
    /// Starts the emulator with the prebuilt `api` and `worker` binaries, which get exactly
    /// `env` on top of the inherited environment (minus `AWS_*` and the application's variables).
    pub async fn start(env: &[(&str, String)]) -> Self {
        Self::start_with(Launch::Prebuilt, env).await
    }

    /// Starts the emulator in the given [`Launch`] mode.
    pub async fn start_with(launch: Launch, env: &[(&str, String)]) -> Self {
        let binary = find_binary();
        let mut failures = Vec::new();
        for _ in 0..START_ATTEMPTS {
            match try_start(&binary, launch, env).await {
                Ok(watch) => return watch,
                Err(failure) => failures.push(failure),
            }
        }
        panic!(
            "cargo lambda watch ({}) did not start:\n{}",
            binary.display(),
            failures.join("\n")
        );
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Invokes `function` with `event` on a task of its own (the Lambda invoke API), so the test
    /// can act while the invocation runs; the task ends with the emulator's answer.
    pub fn invoke_in_background(
        &self,
        function: &str,
        event: serde_json::Value,
    ) -> tokio::task::JoinHandle<reqwest::Result<reqwest::Response>> {
        let invoke = format!(
            "{}/2015-03-31/functions/{function}/invocations",
            self.endpoint()
        );
        tokio::spawn(async move {
            let http = bounded_rag::tls::reqwest_builder()
                .no_proxy()
                .build()
                .unwrap();
            http.post(invoke).json(&event).send().await
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How the functions are run.
    pub fn launch(&self) -> Launch {
        self.launch
    }

    /// The Runtime API base a function of this emulator is given (`AWS_LAMBDA_RUNTIME_API`).
    pub fn runtime_api(&self, function: &str) -> String {
        format!("http://{}/.rt/{function}", self.addr)
    }

    /// Everything the emulator and the functions wrote to stdout and stderr so far.
    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// Invokes `function` with `event` (synchronous `RequestResponse` invoke) and returns its
    /// JSON answer. Panics, quoting the log, on a non-2xx status or a non-JSON answer.
    pub async fn invoke(&self, function: &str, event: &Value) -> Value {
        let response = self.invoke_raw(function, event).await;
        if !(200..300).contains(&response.status) {
            panic!(
                "invoke {function}: HTTP {} {}\n{}",
                response.status,
                response.body,
                self.log_tail()
            );
        }
        serde_json::from_str(&response.body).unwrap_or_else(|e| {
            panic!(
                "invoke {function}: answer is not JSON ({e}): {}\n{}",
                response.body,
                self.log_tail()
            )
        })
    }

    /// Invokes `function` with `event` and returns the emulator's HTTP answer as is.
    pub async fn invoke_raw(&self, function: &str, event: &Value) -> HttpResponse {
        let url = format!(
            "{}/2015-03-31/functions/{function}/invocations",
            self.endpoint()
        );
        let request = self.http.post(url).json(event);
        self.send(function, request).await
    }

    /// A request through the function URL emulation: `{method} /lambda-url/{function}{path}`
    /// (`path` starts with `/` and may carry a query string).
    pub async fn url_request(
        &self,
        function: &str,
        method: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> HttpResponse {
        assert!(path.starts_with('/'), "path must start with '/': {path:?}");
        let method = reqwest::Method::from_bytes(method.as_bytes())
            .unwrap_or_else(|_| panic!("bad HTTP method {method:?}"));
        let url = format!("{}/lambda-url/{function}{path}", self.endpoint());
        let mut request = self.http.request(method, url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.body(body.to_owned());
        }
        self.send(function, request).await
    }

    /// A request through the function URL emulation whose answer is returned as soon as its
    /// head arrives, so a test can read a streamed body piece by piece (`Response::chunk`).
    pub async fn url_stream(
        &self,
        function: &str,
        path: &str,
        body: &str,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let url = format!("{}/lambda-url/{function}{path}", self.endpoint());
        let mut request = self.http.post(url).body(body.to_owned());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request
            .timeout(INVOKE_TIMEOUT)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {path} to {function}: {e}\n{}", self.log_tail()))
    }

    /// Pids of live processes started for this emulator (found by their
    /// `AWS_LAMBDA_RUNTIME_API`). Linux only; empty elsewhere.
    pub fn function_pids(&self) -> Vec<u32> {
        processes_for(self.addr)
    }

    /// The pid of `function`'s live process (found by its `AWS_LAMBDA_FUNCTION_NAME`), if
    /// any. Linux only.
    pub fn function_pid(&self, function: &str) -> Option<u32> {
        let needle = format!("AWS_LAMBDA_FUNCTION_NAME={function}");
        self.function_pids().into_iter().find(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                environ
                    .split(|b| *b == 0)
                    .any(|var| var == needle.as_bytes())
            })
        })
    }

    /// Sends `request`, failing fast (with the log) if the function process dies meanwhile.
    async fn send(&self, function: &str, request: reqwest::RequestBuilder) -> HttpResponse {
        if self.launch == Launch::Prebuilt && !self.processes.iter().any(|p| p.name == function) {
            panic!(
                "no prebuilt binary for function {function:?}: this harness starts {:?} \
                 (those with a src/bin/*.rs when the test was compiled)",
                FUNCTIONS
                    .iter()
                    .filter(|(_, bin)| bin.is_some())
                    .map(|(name, _)| *name)
                    .collect::<Vec<_>>()
            );
        }
        let timeout = match self.launch {
            Launch::Prebuilt => INVOKE_TIMEOUT,
            Launch::CargoRun => CARGO_RUN_INVOKE_TIMEOUT,
        };
        let response = request.timeout(timeout).send();
        tokio::pin!(response);
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        let response = loop {
            tokio::select! {
                response = &mut response => break response,
                _ = tick.tick() => {
                    if let Some(dead) = self.exited(function) {
                        panic!("{function}: {dead} before answering\n{}", self.log_tail());
                    }
                }
            }
        };
        let response = response.unwrap_or_else(|e| {
            panic!(
                "{function}: no answer from {} within {timeout:?}: {e}\n{}",
                self.endpoint(),
                self.log_tail()
            )
        });
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let body = response
            .text()
            .await
            .unwrap_or_else(|e| panic!("{function}: reading the answer: {e}"));
        HttpResponse {
            status,
            headers,
            body,
        }
    }

    /// Why the emulator or `function`'s process is gone, if it is. (A wrapper exits when its
    /// process does; until reaped in drop it is a zombie, which [`alive`] tells apart.)
    fn exited(&self, function: &str) -> Option<String> {
        self.processes
            .iter()
            .enumerate()
            .filter(|(i, p)| *i == 0 || p.name == function)
            .find_map(|(_, p)| {
                let pid = p.child.id();
                (!alive(pid)).then(|| format!("{} (wrapper pid {pid}) exited", p.name))
            })
    }

    fn log_tail(&self) -> String {
        tail(&self.log, LOG_TAIL)
    }
}
