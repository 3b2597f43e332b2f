//! The benchmark suite behind `scripts/bench.sh`: measures every figure of the performance
//! targets and prints one table (and with `--write`, regenerates the measured part of
//! BENCHMARKS.md).
//!
//! Run it through the script, which builds the release binaries, the criterion engine bench,
//! the Python reference venv and the arm64 bootstrap first:
//!
//! ```sh
//! scripts/bench.sh            # print the table
//! scripts/bench.sh --write    # and rewrite BENCHMARKS.md's generated section
//! ```
//!
//! Directly: `cargo bench --bench suite -- [--write] [--quick] [--python PATH]
//! [--arm64-log PATH] [--out PATH]`. `suite serve-llm --delay-ms D` is the scripted model server it starts.

// Children are reaped with wait4(2) (process::reap) to read their peak RSS, which clippy
// cannot see.
#![allow(clippy::zombie_processes)]

mod checkpoint;
mod e2e;
mod llm_server;
mod process;
mod report;
mod runtime_api;

#[allow(dead_code, unused_imports)]
#[path = "../../tests/support/moto.rs"]
mod moto;

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Command-line options.
#[derive(Debug, Default)]
pub struct Options {
    /// Rewrite the generated section of BENCHMARKS.md.
    pub write: bool,
    /// Fewer repetitions, for checking the suite itself.
    pub quick: bool,
    /// Python of the reference venv (LangGraph + langchain-openai).
    pub python: Option<PathBuf>,
    /// Write the table to this file instead of stdout (the library prints EMF metric lines on
    /// stdout while the worker runs, so the script keeps the table apart).
    pub out: Option<PathBuf>,
    /// Result of `cargo lambda build --release --arm64`: first line `ok` or `failed`, then
    /// the build's last lines.
    pub arm64_log: Option<PathBuf>,
}

fn options() -> Options {
    let mut args = std::env::args().skip(1);
    let mut o = Options::default();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--write" => o.write = true,
            "--quick" => o.quick = true,
            "--python" => o.python = args.next().map(PathBuf::from),
            "--arm64-log" => o.arm64_log = args.next().map(PathBuf::from),
            "--out" => o.out = args.next().map(PathBuf::from),
            "--bench" => {} // added by `cargo bench`
            other => panic!("unknown argument {other:?}"),
        }
    }
    o
}

/// The cargo target directory (`CARGO_TARGET_TMPDIR` is `<target>/tmp`).
pub fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .to_path_buf()
}

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn main() {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("serve-llm") {
        let delay = match (args.next().as_deref(), args.next()) {
            (Some("--delay-ms"), Some(ms)) => ms.parse().expect("--delay-ms N"),
            _ => 0,
        };
        llm_server::serve(Duration::from_millis(delay));
        return;
    }
    let options = options();
    let results = report::measure(&options);
    let table = report::render(&results);
    match &options.out {
        Some(path) => std::fs::write(path, &table).expect("write the table"),
        None => println!("{table}"),
    }
    if options.write {
        report::write_benchmarks_md(&root().join("BENCHMARKS.md"), &table, options.quick);
        eprintln!("BENCHMARKS.md updated");
    }
}
