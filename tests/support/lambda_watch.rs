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

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

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

/// The function binaries this crate builds; `None` when a binary does not exist (yet).
const FUNCTIONS: [(&str, Option<&str>); 5] = [
    ("api", option_env!("CARGO_BIN_EXE_api")),
    ("worker", option_env!("CARGO_BIN_EXE_worker")),
    ("stream", option_env!("CARGO_BIN_EXE_stream")),
    ("sweeper", option_env!("CARGO_BIN_EXE_sweeper")),
    ("sync", option_env!("CARGO_BIN_EXE_sync")),
];

/// Functions started only when the test configures them (their required variable is in the
/// environment given): the sync function needs its table, queue and locations.
const OPT_IN: [(&str, &str); 1] = [("sync", "SYNC_TABLE")];

/// Variables of the application (`src/config.rs`) never inherited from the developer's shell:
/// a test sets what it needs and nothing else leaks in. `AWS_*` is dropped as well.
const APP_VARS: [&str; 38] = [
    "LLM_PROVIDER",
    "LLM_BASE_URL",
    "LLM_MODEL",
    "LLM_API_KEY",
    "LLM_TIMEOUT_MS",
    "LLM_CACHE_TTL_SECONDS",
    "WEB_SEARCH_BASE_URL",
    "WEB_SEARCH_API_KEY",
    "SECRETS_ID",
    "SECRETS_TTL_SECONDS",
    "CHECKPOINT_TABLE",
    "WORK_QUEUE_URL",
    "KB_PATH",
    "KB_URI",
    "KB_REFRESH_SECONDS",
    "EMBEDDINGS_BASE_URL",
    "EMBEDDINGS_MODEL",
    "EMBEDDINGS_API_KEY",
    "STATE_DIR",
    "MAX_RETRIES",
    "MAX_REGENERATIONS",
    "MAX_BODY_BYTES",
    "WORKFLOW_RECURSION_LIMIT",
    "DEADLINE_MARGIN_MS",
    "RUN_TIMEOUT_MS",
    "RUN_TTL_SECONDS",
    "MAX_TOKENS_PER_RUN",
    "MAX_ACTIVE_RUNS_PER_CALLER",
    "RUST_LOG",
    "RUN_ID",
    "EVENT_BUS_NAME",
    "SYNC_TABLE",
    "SYNC_QUEUE_URL",
    "SYNC_SOURCE_URI",
    "SYNC_DEST_URI",
    "SYNC_DEBOUNCE_SECONDS",
    "SYNC_LEASE_SECONDS",
    "SYNC_MAX_ATTEMPTS",
];

/// Sends SIGTERM to the command when this process's end of stdin closes, SIGKILL 5 s later.
/// `$1` is the log file (appended to), the rest is the command.
const WRAPPER: &str = r#"log=$1; shift
exec 3<&0
"$@" </dev/null 3<&- >>"$log" 2>&1 &
pid=$!
(
  cat <&3 >/dev/null
  kill -TERM "$pid" 2>/dev/null
  i=0
  while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL "$pid" 2>/dev/null
) &
wait "$pid""#;

/// How the emulator gets the function processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch {
    /// `--only-lambda-apis`; the harness starts the binaries `cargo test` built.
    Prebuilt,
    /// The emulator runs `cargo run --bin {function}` on first invocation (`--ignore-changes`).
    CargoRun,
}

/// A process under the lifeline wrapper.
struct Wrapped {
    name: String,
    child: Child,
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

impl Drop for LambdaWatch {
    fn drop(&mut self) {
        // Closing every lifeline at once: each wrapper sends SIGTERM to its process.
        for process in &mut self.processes {
            drop(process.child.stdin.take());
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        for process in &mut self.processes {
            loop {
                match process.child.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() > deadline => {
                        let _ = process.child.kill();
                        let _ = process.child.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(50)),
                }
            }
        }
        // What the emulator started runs in sessions of its own: check it is gone too.
        loop {
            let left = processes_for(self.addr);
            if left.is_empty() {
                break;
            }
            if Instant::now() > deadline {
                for pid in left {
                    let _ = Command::new("kill")
                        .args(["-KILL", &pid.to_string()])
                        .status();
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

async fn try_start(
    binary: &Path,
    launch: Launch,
    env: &[(&str, String)],
) -> Result<LambdaWatch, String> {
    let port = free_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let log = dir.join(format!("lambda-watch-{port}.log"));
    std::fs::write(&log, "").map_err(|e| format!("cannot create {}: {e}", log.display()))?;

    let mut watch = Command::new(binary);
    watch.args([
        "lambda",
        "watch",
        "--invoke-address",
        "127.0.0.1",
        "--invoke-port",
        &port.to_string(),
    ]);
    match launch {
        Launch::Prebuilt => {
            watch.arg("--only-lambda-apis");
        }
        Launch::CargoRun => {
            let env_file = dir.join(format!("lambda-watch-{port}.env"));
            std::fs::write(&env_file, env_file_text(env))
                .map_err(|e| format!("cannot write {}: {e}", env_file.display()))?;
            watch
                .args(["--ignore-changes", "--env-file"])
                .arg(&env_file);
        }
    }
    watch.current_dir(env!("CARGO_MANIFEST_DIR"));
    scrub(&mut watch);
    watch.env("NO_COLOR", "1").env("CARGO_TERM_COLOR", "never");

    let mut processes = vec![spawn_wrapped("cargo lambda watch", &log, watch)?];
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            break;
        }
        let exited = processes[0].child.try_wait().ok().flatten();
        if exited.is_some() || Instant::now() > deadline {
            let why = match exited {
                Some(status) => format!("exited with {status}"),
                None => format!("did not listen within {START_TIMEOUT:?}"),
            };
            stop(&mut processes);
            return Err(format!(
                "port {port}: {why}; log {}:\n{}",
                log.display(),
                tail(&log, LOG_TAIL)
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    if launch == Launch::Prebuilt {
        for (name, binary) in FUNCTIONS {
            let Some(binary) = binary else { continue };
            let opted_out = OPT_IN
                .iter()
                .any(|(f, var)| *f == name && !env.iter().any(|(k, _)| k == var));
            if opted_out {
                continue;
            }
            // The Runtime API address goes through `env` so that only the function process
            // carries it (the wrapper shells do not): `processes_for` finds exactly the
            // functions by it.
            let mut function = Command::new("env");
            function
                .arg(format!("AWS_LAMBDA_RUNTIME_API=http://{addr}/.rt/{name}"))
                .arg(binary)
                .current_dir(env!("CARGO_MANIFEST_DIR"));
            scrub(&mut function);
            function
                .env("AWS_LAMBDA_FUNCTION_NAME", name)
                .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
                .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
                .envs(env.iter().map(|(k, v)| (*k, v.as_str())));
            match spawn_wrapped(name, &log, function) {
                Ok(process) => processes.push(process),
                Err(e) => {
                    stop(&mut processes);
                    return Err(e);
                }
            }
        }
    }

    let http = bounded_rag::tls::reqwest_builder()
        .no_proxy()
        .build()
        .map_err(|e| format!("reqwest client: {e}"))?;
    Ok(LambdaWatch {
        launch,
        addr,
        log,
        processes,
        http,
    })
}

fn spawn_wrapped(name: &str, log: &Path, command: Command) -> Result<Wrapped, String> {
    let mut wrapper = Command::new("sh");
    wrapper
        .arg("-c")
        .arg(WRAPPER)
        .arg("sh")
        .arg(log)
        .arg(command.get_program())
        .args(command.get_args())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(dir) = command.get_current_dir() {
        wrapper.current_dir(dir);
    }
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => wrapper.env(key, value),
            None => wrapper.env_remove(key),
        };
    }
    let child = wrapper
        .spawn()
        .map_err(|e| format!("cannot spawn sh for {name}: {e}"))?;
    Ok(Wrapped {
        name: name.to_owned(),
        child,
    })
}

/// Closes the lifelines and waits (bounded) for the wrappers; used on failed starts.
fn stop(processes: &mut [Wrapped]) {
    for process in processes.iter_mut() {
        drop(process.child.stdin.take());
    }
    let deadline = Instant::now() + STOP_TIMEOUT;
    for process in processes.iter_mut() {
        while matches!(process.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = process.child.kill();
        let _ = process.child.wait();
    }
}

/// Removes `AWS_*` and the application's variables inherited from the caller's environment.
fn scrub(command: &mut Command) {
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if key.starts_with("AWS_") || APP_VARS.contains(&key) {
            command.env_remove(key);
        }
    }
}

/// `KEY='value'` lines for `--env-file` (read by cargo-lambda with env-file-reader, where
/// single quotes keep a value verbatim).
fn env_file_text(env: &[(&str, String)]) -> String {
    env.iter()
        .map(|(key, value)| {
            assert!(
                !value.contains('\'') && !value.contains('\n'),
                "{key}: values with a single quote or newline cannot go through --env-file"
            );
            format!("{key}='{value}'\n")
        })
        .collect()
}

/// `CARGO_LAMBDA_BIN`, else the repo venv, else `PATH`; panics with the fix when absent.
fn find_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("CARGO_LAMBDA_BIN") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "CARGO_LAMBDA_BIN={} does not exist",
            path.display()
        );
        return path;
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".local/venv/bin/cargo-lambda");
    if venv.is_file() {
        return venv;
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("cargo-lambda"))
            .find(|candidate| candidate.is_file())
    });
    on_path.unwrap_or_else(|| {
        panic!(
            "cargo-lambda not found. Run scripts/setup-test-tools.sh (installs it into \
             .local/venv), or set CARGO_LAMBDA_BIN. These tests need `cargo lambda watch`."
        )
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("bind a loopback port")
}

/// True while `pid` exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => !matches!(
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().chars().next()),
            Some(Some('Z' | 'X'))
        ),
        Err(_) => !Path::new("/proc/self").exists(), // no procfs: assume alive
    }
}

/// Live processes whose `AWS_LAMBDA_RUNTIME_API` points at `addr` (Linux `/proc`).
pub fn processes_for(addr: SocketAddr) -> Vec<u32> {
    let needle = format!("AWS_LAMBDA_RUNTIME_API=http://{addr}/");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                environ
                    .split(|b| *b == 0)
                    .any(|var| var.starts_with(needle.as_bytes()))
            }) && alive(*pid)
        })
        .collect()
}

fn tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut last: Vec<&str> = text.lines().rev().take(lines).collect();
    last.reverse();
    format!(
        "--- last {lines} lines of {} ---\n{}",
        log.display(),
        last.join("\n")
    )
}
