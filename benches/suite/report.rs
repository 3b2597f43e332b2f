//! Runs every measurement in turn and renders the table.

use super::checkpoint::{self, RunCost};
use super::e2e::{self, Batch, E2e};
use super::llm_server::LlmServer;
use super::process::{self, ms, CliRun, Samples};
use super::runtime_api::{self, LambdaRun};
use super::{root, target_dir, Options};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// DESIGN.md's documented Python reference (used when it cannot be measured here).
const PY_DOC_RUN_MS: f64 = 43.0;
const PY_DOC_IMPORT_S: f64 = 1.9;
const PY_DOC_RSS_MIB: f64 = 100.0;

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
    pub cli: Vec<CliRun>,
    pub api: Vec<LambdaRun>,
    pub worker: Vec<LambdaRun>,
    pub e2e_0: E2e,
    pub e2e_50: E2e,
    pub batch: Batch,
    pub checkpoints: Vec<RunCost>,
    pub python: Python,
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
    let state = tempfile::tempdir().expect("temp dir");
    let fresh = |label: &str, i: usize| state.path().join(format!("{label}-{i}"));

    eprintln!("bench: engine (criterion results)");
    let engine_noop = criterion("noop_persist_50_steps");
    let engine_memory = criterion("memory_session_50_steps");

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

    Results {
        engine_noop,
        engine_memory,
        cli,
        api,
        worker,
        e2e_0,
        e2e_50,
        batch,
        checkpoints,
        python,
        sizes: sizes(o.arm64_log.as_deref()),
    }
}

/// Criterion's mean for `engine/<id>`, divided by the 50 steps of a run.
fn criterion(id: &str) -> Option<PerStep> {
    let path = target_dir()
        .join("criterion/engine")
        .join(id)
        .join("new/estimates.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    let mean = &v["mean"];
    Some(PerStep {
        mean_ns: mean["point_estimate"].as_f64()? / 50.0,
        low_ns: mean["confidence_interval"]["lower_bound"].as_f64()? / 50.0,
        high_ns: mean["confidence_interval"]["upper_bound"].as_f64()? / 50.0,
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
    let started = Instant::now();
    let mut child = Command::new(python)
        .arg(root().join("bench/python/reference.py"))
        .args(["--base-url", &server.base_url()])
        .arg("--kb")
        .arg(root().join("kb"))
        .args(["--runs", &runs.to_string()])
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
        return documented(format!(
            "the reference failed here ({line:?}): documented figures"
        ));
    }
    let v: serde_json::Value = serde_json::from_str(rest.trim()).expect("reference JSON");
    assert_eq!(v["calls_per_run"], serde_json::json!([7]), "{v}");
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

// ---------------------------------------------------------------------------------------------
// Rendering

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn mb(bytes: u64) -> String {
    format!("{:.2} MB ({bytes} B)", bytes as f64 / 1e6)
}

fn verdict(met: bool) -> &'static str {
    if met {
        "**met**"
    } else {
        "**missed**"
    }
}

fn samples<T>(runs: &[T], f: impl Fn(&T) -> f64) -> Samples {
    Samples::new(runs.iter().map(f).collect())
}

/// The Markdown report: targets first, then every figure.
pub fn render(r: &Results) -> String {
    let mut s = String::new();
    let cli_answer = samples(&r.cli, |c| ms(c.to_answer));
    let cli_exit = samples(&r.cli, |c| ms(c.to_exit));
    let cli_rss = samples(&r.cli, |c| mib(c.max_rss_kib));
    let api_poll = samples(&r.api, |c| ms(c.to_first_poll));
    let api_resp = samples(&r.api, |c| ms(c.to_first_response));
    let api_rss = samples(&r.api, |c| mib(c.max_rss_kib));
    let wk_poll = samples(&r.worker, |c| ms(c.to_first_poll));
    let wk_resp = samples(&r.worker, |c| ms(c.to_first_response));
    let wk_rss = samples(&r.worker, |c| mib(c.max_rss_kib));
    let py = &r.python;
    let rust_overhead = r.e2e_0.overhead_ms.median();
    let ratio = py.overhead_ms / rust_overhead;
    let typical = &r.checkpoints[0];
    let peak_rss = cli_rss.max().max(api_rss.max()).max(wk_rss.max());
    let slowest = r.batch.single_ms.max();
    let batch_ratio = r.batch.batch_ms.median() / slowest;
    let py_src = if py.measured {
        "measured here"
    } else {
        "documented, not measured here"
    };

    let _ = writeln!(s, "### Targets\n");
    let _ = writeln!(s, "| target | measured | verdict |");
    let _ = writeln!(s, "|---|---|---|");
    let _ = writeln!(
        s,
        "| cold start to answer ≤ 50 ms (CLI, offline) | median {:.1} ms, p90 {:.1} ms (process start → answer on stdout) | {} |",
        cli_answer.median(),
        cli_answer.p90(),
        verdict(cli_answer.p90() <= 50.0)
    );
    let _ = writeln!(
        s,
        "| orchestration overhead ≤ 1/10 of Python's, 7-call run, 0 ms server | Rust {:.2} ms vs Python {:.1} ms ({py_src}): 1/{:.0} | {} |",
        rust_overhead,
        py.overhead_ms,
        ratio,
        verdict(ratio >= 10.0)
    );
    let _ = writeln!(
        s,
        "| peak RSS ≤ 32 MB | CLI {:.1} MiB, `api` {:.1} MiB, `worker` {:.1} MiB (max over runs, one invocation each) | {} |",
        cli_rss.max(),
        api_rss.max(),
        wk_rss.max(),
        verdict(peak_rss * 1024.0 * 1024.0 <= 32e6)
    );
    let writes = typical.writes.len();
    let _ = writeln!(
        s,
        "| at most one DynamoDB write per step | {} writes for {} steps: one per step + one creating the run with its lease | {} |",
        writes,
        typical.steps,
        verdict(writes <= typical.steps + 1)
    );
    let _ = writeln!(
        s,
        "| typical checkpoint item < 8 KB | largest item {:.1} KB (typical run) | {} |",
        typical.max_item() as f64 / 1024.0,
        verdict(typical.max_item() < 8 * 1024)
    );
    let _ = writeln!(
        s,
        "| 10-record batch ≈ its slowest record (met if ≤ ×1.5) | batch median {:.0} ms vs slowest single record {:.0} ms (×{:.2}; serial would be {:.0} ms) | {} |",
        r.batch.batch_ms.median(),
        slowest,
        batch_ratio,
        r.batch.single_ms.mean() * 10.0,
        verdict(batch_ratio <= 1.5)
    );
    match &r.sizes.arm64 {
        Some(arm) => {
            let biggest = arm.iter().map(|(_, b)| *b).max().unwrap_or(0);
            let list: Vec<_> = arm
                .iter()
                .map(|(n, b)| format!("`{n}` {}", mb(*b)))
                .collect();
            let _ = writeln!(
                s,
                "| arm64 bootstrap ≤ 10 MB | {} | {} |",
                list.join(", "),
                verdict(biggest <= 10_000_000)
            );
        }
        None => {
            let list: Vec<_> = r
                .sizes
                .x86_64
                .iter()
                .filter(|(n, _)| n != "bounded-rag")
                .map(|(n, b)| format!("`{n}` {}", mb(*b)))
                .collect();
            let biggest = r.sizes.x86_64.iter().map(|(_, b)| *b).max().unwrap_or(0);
            let _ = writeln!(
                s,
                "| arm64 bootstrap ≤ 10 MB | arm64 build failed; x86_64 proxy: {} | {} (proxy) |",
                list.join(", "),
                verdict(biggest <= 10_000_000)
            );
        }
    }

    let _ = writeln!(s, "\n### All figures\n");
    let _ = writeln!(s, "| area | figure | value |");
    let _ = writeln!(s, "|---|---|---|");
    let mut row = |area: &str, figure: &str, value: String| {
        let _ = writeln!(s, "| {area} | {figure} | {value} |");
    };
    for (name, est) in [
        ("no-op nodes, no-op persist", r.engine_noop),
        (
            "no-op nodes, checkpoint to MemoryStore each step",
            r.engine_memory,
        ),
    ] {
        row(
            "engine (criterion)",
            &format!("time per step: {name}"),
            est.map_or("not run (cargo bench --bench engine)".into(), |e| {
                format!(
                    "{:.0} ns (95% CI {:.0}–{:.0})",
                    e.mean_ns, e.low_ns, e.high_ns
                )
            }),
        );
    }
    for e in [&r.e2e_0, &r.e2e_50] {
        let area = format!("end-to-end, {} ms server", e.delay.as_millis());
        row(
            &area,
            "runs per second (sequential)",
            format!("{:.1}", e.runs_per_sec),
        );
        row(
            &area,
            "wall time per run",
            format!(
                "median {:.2} ms, p90 {:.2} ms",
                e.wall_ms.median(),
                e.wall_ms.p90()
            ),
        );
        row(
            &area,
            "server's own time per run",
            format!("median {:.2} ms", e.server_ms.median()),
        );
        row(
            &area,
            "overhead (wall − server) per run",
            format!(
                "median {:.2} ms, p90 {:.2} ms ({} steps, 7 calls)",
                e.overhead_ms.median(),
                e.overhead_ms.p90(),
                e.steps
            ),
        );
    }
    let py_area = if py.measured {
        format!("Python reference, 0 ms server ({})", py.versions)
    } else {
        format!("Python reference ({})", py.note)
    };
    row(&py_area, "import time", format!("{:.2} s", py.import_s));
    if py.measured {
        row(
            &py_area,
            "process start → graph ready",
            format!("{:.0} ms", py.to_ready_ms),
        );
    }
    row(
        &py_area,
        "wall time per run",
        format!(
            "median {:.1} ms ({:.1} runs/s)",
            py.wall_ms, py.runs_per_sec
        ),
    );
    if py.measured {
        row(
            &py_area,
            "overhead (wall − server) per run",
            format!(
                "median {:.1} ms, p90 {:.1} ms",
                py.overhead_ms, py.overhead_p90_ms
            ),
        );
    }
    row(
        &py_area,
        "peak RSS",
        format!("{:.1} MiB", mib(py.max_rss_kib)),
    );
    row(
        "cold start, CLI `bounded-rag ask` (offline)",
        "process start → answer printed",
        format!(
            "median {:.1} ms, p90 {:.1} ms ({} runs)",
            cli_answer.median(),
            cli_answer.p90(),
            cli_answer.len()
        ),
    );
    row(
        "cold start, CLI `bounded-rag ask` (offline)",
        "process start → exit",
        format!(
            "median {:.1} ms, p90 {:.1} ms",
            cli_exit.median(),
            cli_exit.p90()
        ),
    );
    row(
        "cold start, CLI `bounded-rag ask` (offline)",
        "peak RSS",
        format!(
            "median {:.1} MiB, max {:.1} MiB",
            cli_rss.median(),
            cli_rss.max()
        ),
    );
    for (name, poll, resp, rss) in [
        ("`api` (API Gateway event)", &api_poll, &api_resp, &api_rss),
        ("`worker` (SQS event)", &wk_poll, &wk_resp, &wk_rss),
    ] {
        let area = format!("cold start, Lambda {name}, offline");
        row(
            &area,
            "process start → first Runtime API poll",
            format!(
                "median {:.1} ms, p90 {:.1} ms ({} runs)",
                poll.median(),
                poll.p90(),
                poll.len()
            ),
        );
        row(
            &area,
            "process start → first invocation answered",
            format!("median {:.1} ms, p90 {:.1} ms", resp.median(), resp.p90()),
        );
        row(
            &area,
            "peak RSS (start + one invocation)",
            format!("median {:.1} MiB, max {:.1} MiB", rss.median(), rss.max()),
        );
    }
    for c in &r.checkpoints {
        let area = format!("checkpoints on moto DynamoDB, {}", c.label);
        let bodies = samples(&c.writes, |w| w.body_bytes as f64);
        row(
            &area,
            "DynamoDB writes / steps",
            format!("{} / {} ({} model calls)", c.writes.len(), c.steps, c.calls),
        );
        row(
            &area,
            "checkpoint JSON per write",
            format!("mean {:.0} B, max {:.0} B", bodies.mean(), bodies.max()),
        );
        row(
            &area,
            "stored item per write (DynamoDB size)",
            format!(
                "max {} B, total {} B over the run, {} WCU",
                c.max_item(),
                c.total_item_bytes(),
                c.wcu()
            ),
        );
    }
    let area = "SQS worker, 10 new-run records, 50 ms server";
    row(
        area,
        "one invocation on the 10-record batch",
        format!(
            "median {:.0} ms ({} reps)",
            r.batch.batch_ms.median(),
            r.batch.batch_ms.len()
        ),
    );
    row(
        area,
        "one record per invocation",
        format!(
            "median {:.0} ms, slowest {:.0} ms",
            r.batch.single_ms.median(),
            slowest
        ),
    );
    row(
        area,
        "batch / slowest record",
        format!(
            "×{:.2} (10 records serially: ≈{:.0} ms)",
            batch_ratio,
            r.batch.single_ms.mean() * 10.0
        ),
    );
    match (&r.sizes.arm64, &r.sizes.arm64_error) {
        (Some(arm), _) => {
            for (n, b) in arm {
                row("size", &format!("arm64 `{n}` bootstrap"), mb(*b));
            }
        }
        (None, Some(err)) => {
            let err = err.lines().last().unwrap_or("").replace('|', "\\|");
            row("size", "arm64 bootstrap", format!("build failed: `{err}`"));
        }
        (None, None) => {}
    }
    for (n, b) in &r.sizes.x86_64 {
        row("size", &format!("x86_64 release `{n}`"), mb(*b));
    }
    s
}

// ---------------------------------------------------------------------------------------------
// BENCHMARKS.md

const BEGIN: &str = "<!-- BEGIN GENERATED: scripts/bench.sh --write -->";
const END: &str = "<!-- END GENERATED -->";

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn run(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .current_dir(root())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// Machine, toolchain, revision and date of this measurement.
fn provenance(quick: bool) -> String {
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let mem_kib: u64 = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0);
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_owned();
    let rustc = run("rustc", &["--version"]);
    let commit = run("git", &["rev-parse", "--short", "HEAD"]);
    let dirty = if run("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty() {
        ""
    } else {
        " (with uncommitted changes)"
    };
    let now = time::OffsetDateTime::now_utc();
    let date = format!(
        "{:04}-{:02}-{:02} {:02}:{:02} UTC",
        now.year(),
        now.month() as u8,
        now.day(),
        now.hour(),
        now.minute()
    );
    format!(
        "- **Date:** {date}\n\
         - **Machine:** {cpu}, {cpus} CPUs (nproc), {:.1} GiB RAM, Linux {kernel}\n\
         - **Toolchain:** {rustc}; release profile of Cargo.toml\n\
         - **Revision:** {commit}{dirty}\n\
         - **Command:** `scripts/bench.sh --write{}`\n",
        mem_kib as f64 / 1024.0 / 1024.0,
        if quick {
            " --quick` (reduced repetitions: not for publishing"
        } else {
            ""
        }
    )
}

/// Replaces the generated section of BENCHMARKS.md (between its markers) with `table`.
pub fn write_benchmarks_md(path: &Path, table: &str, quick: bool) {
    let generated = format!("{BEGIN}\n{}\n{table}{END}", provenance(quick));
    let current = std::fs::read_to_string(path).unwrap_or_default();
    let updated = match (current.find(BEGIN), current.find(END)) {
        (Some(b), Some(e)) if b < e => {
            format!("{}{generated}{}", &current[..b], &current[e + END.len()..])
        }
        _ => format!("# Benchmarks\n\n{generated}\n"),
    };
    std::fs::write(path, updated).expect("write BENCHMARKS.md");
}
