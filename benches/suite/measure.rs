//! Runs every measurement in turn and collects the figures (`render` turns them into the table).

use super::checkpoint::{self, RunCost};
use super::e2e::{self, Batch, E2e};
use super::latency::{self, Latency};
use super::llm_server::LlmServer;
use super::process::{self, ms, CliRun};
use super::runtime_api::{self, LambdaRun};
use super::{root, target_dir, Options};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// DESIGN.md's documented Python reference (used when it cannot be measured here).
const PY_DOC_RUN_MS: f64 = 43.0;
const PY_DOC_IMPORT_S: f64 = 1.9;
const PY_DOC_RSS_MIB: f64 = 100.0;
/// The scripted model's delay per call for the latency figures.
const LATENCY_MS: u64 = 300;

/// Criterion's estimate for one benchmark, per step.
#[derive(Debug, Clone, Copy)]
pub struct PerStep {
    pub mean_ns: f64,
    pub low_ns: f64,
    pub high_ns: f64,
}

/// The Python reference's figures.
#[derive(Debug, Clone)]
pub struct Python {
    pub measured: bool,
    pub versions: String,
    pub import_s: f64,
    pub to_ready_ms: f64,
    pub wall_ms: f64,
    pub overhead_ms: f64,
    pub overhead_p90_ms: f64,
    pub runs_per_sec: f64,
    pub max_rss_kib: u64,
    pub note: String,
}

/// The arm64 build's outcome and the binary sizes.
#[derive(Debug, Clone)]
pub struct Sizes {
    /// `(name, bytes)` of the arm64 bootstraps, when the build worked.
    pub arm64: Option<Vec<(String, u64)>>,
    /// Why it did not.
    pub arm64_error: Option<String>,
    /// `(name, bytes)` of the x86_64 release binaries.
    pub x86_64: Vec<(String, u64)>,
}

/// Everything measured.
pub struct Results {
    pub engine_noop: Option<PerStep>,
    pub engine_memory: Option<PerStep>,
    /// `(what, per span or per step)` from the engine bench's `tracing` group.
    pub tracing: Vec<(&'static str, Option<PerStep>)>,
    pub cli: Vec<CliRun>,
    pub api: Vec<LambdaRun>,
    pub worker: Vec<LambdaRun>,
    pub e2e_0: E2e,
    pub e2e_50: E2e,
    pub batch: Batch,
    pub checkpoints: Vec<RunCost>,
    pub python: Python,
    pub latency: Latency,
    /// The Python reference at the latency server's delay, when it runs here.
    pub python_latency: Option<PythonLatency>,
    pub sizes: Sizes,
}

fn bin(name: &str) -> PathBuf {
    let path = target_dir().join("release").join(name);
    assert!(
        path.is_file(),
        "{} is missing: run scripts/bench.sh (it builds the release binaries first)",
        path.display()
    );
    path
}

/// Runs every measurement.
pub fn measure(o: &Options) -> Results {
    let (cold_runs, e2e_runs, e2e_50_runs, batch_reps, py_runs) = if o.quick {
        (3, 20, 3, 1, 5)
    } else {
        (20, 300, 20, 5, 100)
    };
    let (latency_runs, py_latency_runs) = if o.quick { (3, 2) } else { (10, 5) };
    let state = tempfile::tempdir().expect("temp dir");
    let fresh = |label: &str, i: usize| state.path().join(format!("{label}-{i}"));

    eprintln!("bench: engine (criterion results)");
    let engine_noop = criterion("engine", "noop_persist_50_steps", 50.0);
    let engine_memory = criterion("engine", "memory_session_50_steps", 50.0);
    let tracing = [
        (
            "one step span, no subscriber",
            "step_span_no_subscriber",
            1.0,
        ),
        ("one step span, CLI subscriber", "step_span_cli", 1.0),
        (
            "one step span, Lambda subscriber, export off (default)",
            "step_span_lambda_export_off",
            1.0,
        ),
        (
            "one step span, Lambda subscriber, export on",
            "step_span_lambda_export_on",
            1.0,
        ),
        (
            "per step of a run, no subscriber",
            "run_50_steps_no_subscriber",
            50.0,
        ),
        (
            "per step of a run, Lambda subscriber, export off (logs at WARN)",
            "run_50_steps_lambda_export_off",
            50.0,
        ),
        (
            "per step of a run, Lambda subscriber, export on (logs at WARN)",
            "run_50_steps_lambda_export_on",
            50.0,
        ),
    ]
    .map(|(what, id, per)| (what, criterion("tracing", id, per)))
    .to_vec();

    eprintln!("bench: cold start of the CLI ({cold_runs} runs)");
    let cli_bin = bin("bounded-rag");
    let question = e2e::QUESTION;
    let cli: Vec<_> = (0..cold_runs + 2)
        .map(|i| process::cli_once(&cli_bin, question, &fresh("cli", i)))
        .skip(2)
        .collect();

    eprintln!("bench: cold start of the Lambda binaries ({cold_runs} runs each)");
    let api_event = std::fs::read_to_string(root().join("events/apigw-run.json")).unwrap();
    let sqs_event = std::fs::read_to_string(root().join("events/sqs-new-run.json")).unwrap();
    let lambda = |name: &str, event: &str| -> Vec<LambdaRun> {
        let path = bin(name);
        (0..cold_runs + 2)
            .map(|i| runtime_api::lambda_once(&path, name, event, &fresh(name, i)))
            .skip(2)
            .collect()
    };
    let api = lambda("api", &api_event);
    let worker = lambda("worker", &sqs_event);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let server_0 = LlmServer::start(Duration::ZERO);
    let server_50 = LlmServer::start(Duration::from_millis(50));
    eprintln!("bench: end-to-end, 0 ms server ({e2e_runs} runs)");
    let e2e_0 = rt.block_on(e2e::sequential(&server_0, 20, e2e_runs));
    eprintln!("bench: end-to-end, 50 ms server ({e2e_50_runs} runs)");
    let e2e_50 = rt.block_on(e2e::sequential(&server_50, 2, e2e_50_runs));
    eprintln!("bench: SQS batch of 10, 50 ms server");
    let batch = rt.block_on(e2e::batch(&server_50, batch_reps));
    eprintln!("bench: checkpoints on moto's DynamoDB");
    let checkpoints = rt.block_on(checkpoint::measure(&server_0));

    eprintln!("bench: Python reference");
    let python = python(o.python.as_deref(), &server_0, py_runs);
    drop((server_0, server_50));

    let server_300 = LlmServer::start(Duration::from_millis(LATENCY_MS));
    eprintln!("bench: latency, {LATENCY_MS} ms per model call, CLI ({latency_runs} runs each)");
    let latency = latency::measure(&cli_bin, &server_300, state.path(), latency_runs);
    eprintln!("bench: Python reference, {LATENCY_MS} ms per model call ({py_latency_runs} runs)");
    let python_latency = python_latency(o.python.as_deref(), &server_300, py_latency_runs);
    drop(server_300);

    Results {
        engine_noop,
        engine_memory,
        tracing,
        cli,
        api,
        worker,
        e2e_0,
        e2e_50,
        batch,
        checkpoints,
        python,
        latency,
        python_latency,
        sizes: sizes(o.arm64_log.as_deref()),
    }
}

/// Criterion's mean for `<group>/<id>`, divided by `per` (the 50 steps of a run, or 1).
fn criterion(group: &str, id: &str, per: f64) -> Option<PerStep> {
    let path = target_dir()
        .join("criterion")
        .join(group)
        .join(id)
        .join("new/estimates.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let mean = &v["mean"];
    Some(PerStep {
        mean_ns: mean["point_estimate"].as_f64()? / per,
        low_ns: mean["confidence_interval"]["lower_bound"].as_f64()? / per,
        high_ns: mean["confidence_interval"]["upper_bound"].as_f64()? / per,
    })
}

fn python(python: Option<&Path>, server: &LlmServer, runs: usize) -> Python {
    let documented = |note: String| Python {
        measured: false,
        versions: String::new(),
        import_s: PY_DOC_IMPORT_S,
        to_ready_ms: f64::NAN,
        wall_ms: PY_DOC_RUN_MS,
        overhead_ms: PY_DOC_RUN_MS,
        overhead_p90_ms: f64::NAN,
        runs_per_sec: 1e3 / PY_DOC_RUN_MS,
        max_rss_kib: (PY_DOC_RSS_MIB * 1024.0) as u64,
        note,
    };
    let Some(python) = python.filter(|p| p.is_file()) else {
        return documented("not installed here: DESIGN.md's documented figures".into());
    };
    let versions = Command::new(python)
        .args([
            "-c",
            "import importlib.metadata as m, sys; print(f\"Python {sys.version.split()[0]}, langgraph {m.version('langgraph')}, langchain-openai {m.version('langchain-openai')}\")",
        ])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let Some((to_ready, v, reaped)) = reference(python, server, runs, 5) else {
        return documented("the reference failed here: documented figures".into());
    };
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Python {
        measured: true,
        versions,
        import_s: f("import_s"),
        to_ready_ms: ms(to_ready),
        wall_ms: f("wall_ms_median"),
        overhead_ms: f("overhead_ms_median"),
        overhead_p90_ms: f("overhead_ms_p90"),
        runs_per_sec: f("runs_per_sec"),
        max_rss_kib: reaped.max_rss_kib,
        note: String::new(),
    }
}

/// Runs `bench/python/reference.py` against `server` (`runs` timed runs after `warmup`):
/// process start to `ready`, its JSON figures (checked to be 7-call runs) and how it ended.
/// `None` when it failed (its stderr is the suite's).
fn reference(
    python: &Path,
    server: &LlmServer,
    runs: usize,
    warmup: usize,
) -> Option<(Duration, serde_json::Value, process::Reaped)> {
    let started = Instant::now();
    let mut child = Command::new(python)
        .arg(root().join("bench/python/reference.py"))
        .args(["--base-url", &server.base_url()])
        .arg("--kb")
        .arg(root().join("kb"))
        .args(["--runs", &runs.to_string(), "--warmup", &warmup.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the Python reference");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let to_ready = started.elapsed();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let reaped = process::reap(&child).expect("reap Python");
    if line.trim() != "ready" || !reaped.success {
        eprintln!("bench: the Python reference failed ({line:?})");
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(rest.trim()).expect("reference JSON");
    assert_eq!(v["calls_per_run"], serde_json::json!([7]), "{v}");
    Some((to_ready, v, reaped))
}

/// The Python reference's wall time per run at a per-call delay (in-process, after warm-up).
#[derive(Debug, Clone, Copy)]
pub struct PythonLatency {
    pub runs: usize,
    pub wall_ms: f64,
    pub wall_p90_ms: f64,
}

fn python_latency(python: Option<&Path>, server: &LlmServer, runs: usize) -> Option<PythonLatency> {
    let python = python.filter(|p| p.is_file())?;
    let (_, v, _) = reference(python, server, runs, 1)?;
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Some(PythonLatency {
        runs,
        wall_ms: f("wall_ms_median"),
        wall_p90_ms: f("wall_ms_p90"),
    })
}

/// ELF machine of a binary: 0x3e x86_64, 0xb7 aarch64.
fn elf_machine(path: &Path) -> Option<u16> {
    let mut head = [0u8; 20];
    std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
    (head[..4] == *b"\x7fELF").then(|| u16::from_le_bytes([head[18], head[19]]))
}

fn sizes(arm64_log: Option<&Path>) -> Sizes {
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let x86_64 = ["api", "worker", "bounded-rag"]
        .iter()
        .map(|n| (n.to_string(), size(&bin(n))))
        .collect();
    let log = arm64_log
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_else(|| "failed\n(not attempted: run through scripts/bench.sh)".into());
    let (status, detail) = log.split_once('\n').unwrap_or((log.as_str(), ""));
    let lambda = target_dir().join("lambda");
    let bootstraps: Vec<_> = ["api", "worker"]
        .iter()
        .map(|n| (n.to_string(), lambda.join(n).join("bootstrap")))
        .collect();
    let all_arm64 = bootstraps.iter().all(|(_, p)| elf_machine(p) == Some(0xb7));
    if status.trim() == "ok" && all_arm64 {
        Sizes {
            arm64: Some(
                bootstraps
                    .iter()
                    .map(|(n, p)| (n.clone(), size(p)))
                    .collect(),
            ),
            arm64_error: None,
            x86_64,
        }
    } else {
        let why = if status.trim() == "ok" {
            "the build reported success but target/lambda/*/bootstrap is not aarch64".to_owned()
        } else {
            detail.trim().to_owned()
        };
        Sizes {
            arm64: None,
            arm64_error: Some(why),
            x86_64,
        }
    }
}
