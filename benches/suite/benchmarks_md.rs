//! Regenerates the measured part of BENCHMARKS.md, with the machine, toolchain, revision and
//! date it was measured on.

use super::root;
use std::path::Path;
use std::process::Command;

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
         - **Command:** `scripts/bench.sh --write{}\n",
        mem_kib as f64 / 1024.0 / 1024.0,
        if quick {
            " --quick` (reduced repetitions: not for publishing)"
        } else {
            "`"
        }
    )
}

/// Replaces the generated section of BENCHMARKS.md (between its markers) with `table`.
pub fn write(path: &Path, table: &str, quick: bool) {
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
