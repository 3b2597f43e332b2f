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

/// The span of the generated section (markers included) in `text`.
fn generated_span(text: &str) -> Option<(usize, usize)> {
    let begin = text.find(BEGIN)?;
    let end = begin + text[begin..].find(END)? + END.len();
    Some((begin, end))
}

/// Checks, before anything is measured, that `path` has a generated section to replace: the
/// hand-written rest of the file is never touched, so a file without the markers is an error.
pub fn check(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--write: cannot read {}: {e}", path.display()))?;
    generated_span(&text).map(|_| ()).ok_or_else(|| {
        format!(
            "--write: {} has no generated section (a line `{BEGIN}`, later `{END}`)",
            path.display()
        )
    })
}

/// Replaces the generated section of BENCHMARKS.md (between its markers) with `table`.
pub fn write(path: &Path, table: &str, quick: bool) -> Result<(), String> {
    check(path)?;
    let current = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let (begin, end) = generated_span(&current).expect("checked");
    let generated = format!("{BEGIN}\n{}\n{table}{END}", provenance(quick));
    let updated = format!("{}{generated}{}", &current[..begin], &current[end..]);
    std::fs::write(path, updated).map_err(|e| format!("--write: {}: {e}", path.display()))
}
