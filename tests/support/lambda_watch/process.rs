//! How [`LambdaWatch`] starts and stops its processes: the emulator and the prebuilt function
//! binaries, each under the `sh` lifeline wrapper, with the application's variables scrubbed
//! from their environment; and finding them again by their Runtime API address in `/proc`.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{LambdaWatch, Launch, LOG_TAIL, START_TIMEOUT, STOP_TIMEOUT};

/// The function binaries this crate builds; `None` when a binary does not exist (yet).
pub(super) const FUNCTIONS: [(&str, Option<&str>); 5] = [
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

/// A process under the lifeline wrapper.
pub(super) struct Wrapped {
    pub(super) name: String,
    pub(super) child: Child,
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

pub(super) async fn try_start(
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
pub(super) fn find_binary() -> PathBuf {
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

pub(super) fn tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut last: Vec<&str> = text.lines().rev().take(lines).collect();
    last.reverse();
    format!(
        "--- last {lines} lines of {} ---\n{}",
        log.display(),
        last.join("\n")
    )
}
