//! The Markdown table: the targets with their verdicts, then every figure.

use super::measure::{PerStep, Results};
use super::process::{ms, Samples};
use std::fmt::Write as _;

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
    let lat = &r.latency;
    let delay_ms = lat.delay.as_millis();
    let times = |ms: f64| format!("{ms:.0} ms = {:.2} ×", lat.times(ms));
    let reference = match &r.python_latency {
        Some(p) => format!(
            "; LangGraph reference {} (in-process, per run, median of {})",
            times(p.wall_ms),
            p.runs
        ),
        None => "; LangGraph reference not measured here".to_owned(),
    };
    let _ = writeln!(
        s,
        "| full-quality happy path ≤ 2.3 × the model latency ({delay_ms} ms per call), speculation on (the default), verdict on the median | median {}, p90 {} (CLI process start → answer on stdout; {:.2} round trips waited, the server's busy time){reference} | {} |",
        times(lat.happy_ms.median()),
        times(lat.happy_ms.p90()),
        lat.happy_round_trips.median(),
        verdict(lat.times(lat.happy_ms.median()) <= 2.3)
    );
    let _ = writeln!(
        s,
        "| happy path with `SPECULATION=off` ≤ 4.2 × the model latency, verdict on the median | median {}, p90 {} ({:.2} round trips waited) | {} |",
        times(lat.happy_off_ms.median()),
        times(lat.happy_off_ms.p90()),
        lat.happy_off_round_trips.median(),
        verdict(lat.times(lat.happy_off_ms.median()) <= 4.2)
    );
    let _ = writeln!(
        s,
        "| first answer token ≤ 1.3 × the model latency with streaming, verdict on the median | median {}, p90 {} (`ask --stream`: process start → first answer text on stdout) | {} |",
        times(lat.first_token_ms.median()),
        times(lat.first_token_ms.p90()),
        verdict(lat.times(lat.first_token_ms.median()) <= 1.3)
    );
    let _ = writeln!(
        s,
        "| identical question again, cache on: ≤ 50 ms and 0 model calls, verdict on the median | second run median {:.1} ms, p90 {:.1} ms (CLI process start → answer); model calls at the server: {} (most in any run), cache hits ≥ {} | {} |",
        lat.cache_second_ms.median(),
        lat.cache_second_ms.p90(),
        lat.cache_second_calls,
        lat.cache_second_hits,
        verdict(lat.cache_second_ms.median() <= 50.0 && lat.cache_second_calls == 0)
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
            per_step(est),
        );
    }
    for (name, est) in &r.tracing {
        row("tracing (criterion)", name, per_step(*est));
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
    let area = format!("latency, {delay_ms} ms per model call, CLI `bounded-rag -q ask`");
    let dist = |x: &Samples| {
        format!(
            "median {}, p90 {} ({} runs)",
            times(x.median()),
            times(x.p90()),
            x.len()
        )
    };
    row(
        &area,
        "full quality, `--json`: process start → answer printed",
        dist(&lat.happy_ms),
    );
    row(
        &area,
        "full quality, `--json`: process start → exit",
        dist(&lat.happy_exit_ms),
    );
    row(
        &area,
        "full quality, `--json`: round trips waited (server busy time ÷ delay)",
        format!(
            "median {:.2}, p90 {:.2}",
            lat.happy_round_trips.median(),
            lat.happy_round_trips.p90()
        ),
    );
    row(
        &area,
        "`SPECULATION=off`, `--json`: process start → answer printed",
        dist(&lat.happy_off_ms),
    );
    row(
        &area,
        "`SPECULATION=off`, `--json`: round trips waited",
        format!(
            "median {:.2}, p90 {:.2}",
            lat.happy_off_round_trips.median(),
            lat.happy_off_round_trips.p90()
        ),
    );
    row(
        &area,
        "`--stream`: process start → first answer text",
        dist(&lat.first_token_ms),
    );
    row(
        &area,
        "`--stream`: process start → exit",
        dist(&lat.stream_exit_ms),
    );
    row(
        &area,
        "cache on, first run: process start → answer printed",
        dist(&lat.cache_first_ms),
    );
    row(
        &area,
        "cache on, same question again: process start → answer printed",
        format!(
            "median {:.1} ms, p90 {:.1} ms ({} runs)",
            lat.cache_second_ms.median(),
            lat.cache_second_ms.p90(),
            lat.cache_second_ms.len()
        ),
    );
    row(
        &area,
        "cache on, same question again: model calls at the server / cache hits",
        format!(
            "{} (most in any run) / {} (fewest in any run)",
            lat.cache_second_calls, lat.cache_second_hits
        ),
    );
    if let Some(p) = &r.python_latency {
        row(
            &format!("Python reference, {delay_ms} ms per model call"),
            "wall time per run (in-process, after 1 warm-up run)",
            format!(
                "median {}, p90 {} ({} runs)",
                times(p.wall_ms),
                times(p.wall_p90_ms),
                p.runs
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

/// A criterion mean with its confidence interval, or how to get one.
fn per_step(est: Option<PerStep>) -> String {
    est.map_or("not run (cargo bench --bench engine)".into(), |e| {
        format!(
            "{:.0} ns (95% CI {:.0}–{:.0})",
            e.mean_ns, e.low_ns, e.high_ns
        )
    })
}
