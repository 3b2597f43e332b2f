//! What a user waits for when every model call takes 300 ms: the release `bounded-rag` CLI,
//! one process per question, against the scripted server process.
//!
//! - **Happy path:** `bounded-rag -q ask --json QUESTION` (full quality, the default mode,
//!   speculation on by default): time from process start to the answer on stdout (the JSON
//!   response is printed when the run ends), checked to be a completed 7-call run whose
//!   speculative answer was used. Also measured with `SPECULATION=off`.
//! - **Round trips:** the server's busy time (the union of the intervals with a call in
//!   flight) of a happy run, in multiples of the per-call delay: the model round trips the
//!   run waited for, whatever else the machine was doing.
//! - **First answer token:** `bounded-rag -q ask --stream QUESTION`: time from process start to
//!   the first byte on stdout, which is the answer's first text (no progress on stdout), checked
//!   to be the scripted answer's start and one streamed model call.
//! - **Cache:** `LLM_CACHE_TTL_SECONDS` on, the same question twice against one fresh
//!   `STATE_DIR` (the file store holds the checkpoints and the cached replies): the second
//!   run's process start to answer, and the model calls the server saw during it.
//!
//! Each CLI measurement drops its first run (page cache). The latency is reported as ms and as
//! a multiple of the scripted per-call delay.

use super::e2e::{CALLS_PER_RUN, QUESTION};
use super::llm_server::{LlmServer, Stats};
use super::process::{ms, reap, Samples};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Start of the scripted answer, as the streamed text shows it.
const ANSWER_START: &str = "Phytophthora";

/// One CLI process run against the server.
struct CliRun {
    /// Process start to the first byte on stdout.
    to_stdout: Duration,
    /// Process start to exit.
    to_exit: Duration,
    /// Everything printed on stdout.
    stdout: String,
    /// What the server saw meanwhile.
    served: Stats,
}

/// Runs `bounded-rag -q ask ARGS QUESTION` against `server` with an otherwise empty
/// environment, `state_dir` as `STATE_DIR`, the response cache on when `cache`, and the
/// environment's `extra` variables.
fn cli_with(
    bin: &Path,
    server: &LlmServer,
    state_dir: &Path,
    args: &[&str],
    cache: bool,
    extra: &[(&str, &str)],
) -> CliRun {
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("LLM_PROVIDER", "openai")
        .env("LLM_BASE_URL", server.base_url())
        .env("LLM_MODEL", "bench")
        .env("STATE_DIR", state_dir)
        .args(["-q", "ask"])
        .args(args)
        .arg(QUESTION)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if cache {
        cmd.env("LLM_CACHE_TTL_SECONDS", "3600");
    }
    cmd.envs(extra.iter().copied());
    let before = server.stats();
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn the CLI");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 1];
    let n = stdout.read(&mut first).expect("read the answer");
    let to_stdout = started.elapsed();
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).expect("read the rest");
    let reaped = reap(&child).expect("reap the CLI");
    let to_exit = started.elapsed();
    let served = server.stats() - before;
    let mut out = first[..n].to_vec();
    out.extend(rest);
    let stdout = String::from_utf8_lossy(&out).into_owned();
    assert!(reaped.success && n == 1, "the CLI failed: {stdout}");
    CliRun {
        to_stdout,
        to_exit,
        stdout,
        served,
    }
}

/// [`cli_with`] with no extra variables (speculation at its default, on).
fn cli(bin: &Path, server: &LlmServer, state_dir: &Path, args: &[&str], cache: bool) -> CliRun {
    cli_with(bin, server, state_dir, args, cache, &[])
}

/// Checks a `--json` response is a completed run; returns its (model calls, cache hits).
fn completed(run: &CliRun) -> (u64, u64) {
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("the response JSON");
    assert_eq!(v["status"], "completed", "{v}");
    assert!(v["answer"].as_str().is_some_and(|a| !a.is_empty()), "{v}");
    let m = &v["metadata"];
    (
        m["model_calls"].as_u64().expect("model_calls"),
        m["cache_hits"].as_u64().expect("cache_hits"),
    )
}

/// Everything measured at one per-call delay.
#[derive(Debug, Clone)]
pub struct Latency {
    /// The scripted delay of every model call.
    pub delay: Duration,
    /// Happy path, no stream: process start → answer printed, ms.
    pub happy_ms: Samples,
    /// Happy path, no stream: process start → exit, ms.
    pub happy_exit_ms: Samples,
    /// Happy path: the server's busy time, in multiples of the delay (round trips waited).
    pub happy_round_trips: Samples,
    /// Happy path with `SPECULATION=off`: process start → answer printed, ms.
    pub happy_off_ms: Samples,
    /// Happy path with `SPECULATION=off`: round trips waited.
    pub happy_off_round_trips: Samples,
    /// Streaming: process start → first answer text on stdout, ms.
    pub first_token_ms: Samples,
    /// Streaming: process start → exit, ms.
    pub stream_exit_ms: Samples,
    /// Cache on, first run of the question: process start → answer printed, ms.
    pub cache_first_ms: Samples,
    /// Cache on, second run of the same question: process start → answer printed, ms.
    pub cache_second_ms: Samples,
    /// Most model calls the server saw during any second run.
    pub cache_second_calls: u64,
    /// Fewest cache hits any second run reported (`metadata.cache_hits`).
    pub cache_second_hits: u64,
}

impl Latency {
    /// `ms` as a multiple of the per-call delay.
    pub fn times(&self, ms: f64) -> f64 {
        ms / (self.delay.as_secs_f64() * 1e3)
    }
}

/// Measures the three figures, `runs` times each (plus one dropped run each), with fresh state
/// folders under `state`.
pub fn measure(bin: &Path, server: &LlmServer, state: &Path, runs: usize) -> Latency {
    let dir = |label: &str, i: usize| state.join(format!("latency-{label}-{i}"));
    let trips = |run: &CliRun| run.served.busy.as_secs_f64() / server.delay().as_secs_f64();
    let (mut happy, mut happy_exit, mut happy_trips) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..=runs {
        let run = cli(bin, server, &dir("happy", i), &["--json"], false);
        let (calls, _) = completed(&run);
        assert_eq!(calls, CALLS_PER_RUN, "a 7-call run");
        assert_eq!(run.served.requests, CALLS_PER_RUN, "7 requests served");
        let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
        assert_eq!(v["metadata"]["speculation"]["used"], 1, "speculation used");
        if i > 0 {
            happy.push(ms(run.to_stdout));
            happy_exit.push(ms(run.to_exit));
            happy_trips.push(trips(&run));
        }
    }
    let (mut off, mut off_trips) = (Vec::new(), Vec::new());
    for i in 0..=runs {
        let no = [("SPECULATION", "off")];
        let run = cli_with(bin, server, &dir("off", i), &["--json"], false, &no);
        let (calls, _) = completed(&run);
        assert_eq!(calls, CALLS_PER_RUN, "a 7-call run");
        if i > 0 {
            off.push(ms(run.to_stdout));
            off_trips.push(trips(&run));
        }
    }
    let (mut first_token, mut stream_exit) = (Vec::new(), Vec::new());
    for i in 0..=runs {
        let run = cli(bin, server, &dir("stream", i), &["--stream"], false);
        assert!(run.stdout.starts_with(ANSWER_START), "{}", run.stdout);
        assert_eq!(run.served.requests, CALLS_PER_RUN, "7 requests served");
        assert_eq!(run.served.streamed, 1, "the answer call streamed");
        if i > 0 {
            first_token.push(ms(run.to_stdout));
            stream_exit.push(ms(run.to_exit));
        }
    }
    let (mut first, mut second) = (Vec::new(), Vec::new());
    let (mut second_calls, mut second_hits) = (0, u64::MAX);
    for i in 0..=runs {
        let state_dir = dir("cache", i);
        let one = cli(bin, server, &state_dir, &["--json"], true);
        assert_eq!(completed(&one), (CALLS_PER_RUN, 0), "a first run misses");
        let two = cli(bin, server, &state_dir, &["--json"], true);
        let (calls, hits) = completed(&two);
        assert_eq!(
            calls, two.served.requests,
            "metadata counts the server's calls"
        );
        if i > 0 {
            first.push(ms(one.to_stdout));
            second.push(ms(two.to_stdout));
            second_calls = second_calls.max(two.served.requests);
            second_hits = second_hits.min(hits);
        }
    }
    Latency {
        delay: server.delay(),
        happy_ms: Samples::new(happy),
        happy_exit_ms: Samples::new(happy_exit),
        happy_round_trips: Samples::new(happy_trips),
        happy_off_ms: Samples::new(off),
        happy_off_round_trips: Samples::new(off_trips),
        first_token_ms: Samples::new(first_token),
        stream_exit_ms: Samples::new(stream_exit),
        cache_first_ms: Samples::new(first),
        cache_second_ms: Samples::new(second),
        cache_second_calls: second_calls,
        cache_second_hits: second_hits,
    }
}
