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
//! Directly: `cargo bench --bench suite -- --help`. `suite serve-llm --delay-ms D` is the
//! scripted model server it starts.

// Children are reaped with wait4(2) (process::reap) to read their peak RSS, which clippy
// cannot see.
#![allow(clippy::zombie_processes)]

mod benchmarks_md;
mod checkpoint;
mod cold_start;
mod e2e;
mod latency;
mod llm_server;
mod measure;
mod process;
mod render;
mod runtime_api;
#[path = "../common/runtime_server.rs"]
mod runtime_server;

#[allow(dead_code, unused_imports)]
#[path = "../../tests/support/moto.rs"]
mod moto;

use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The benchmark suite (run it through `scripts/bench.sh`).
#[derive(Debug, Default, Parser)]
#[command(name = "suite")]
pub struct Options {
    /// Rewrite the generated section of BENCHMARKS.md.
    #[arg(long)]
    pub write: bool,
    /// Fewer repetitions, for checking the suite itself.
    #[arg(long)]
    pub quick: bool,
    /// Python of the reference venv (LangGraph + langchain-openai).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Write the table to this file instead of stdout (the library prints EMF metric lines on
    /// stdout while the worker runs, so the script keeps the table apart).
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Result of `cargo lambda build --release --arm64`: first line `ok` or `failed`, then
    /// the build's last lines.
    #[arg(long, value_name = "PATH")]
    pub arm64_log: Option<PathBuf>,
    /// Added by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
    #[command(subcommand)]
    command: Option<Sub>,
}

#[derive(Debug, Subcommand)]
enum Sub {
    /// Serve the scripted OpenAI-compatible model on 127.0.0.1 (the suite starts it).
    ServeLlm {
        /// Delay before each chat reply, in milliseconds.
        #[arg(long, default_value_t = 0)]
        delay_ms: u64,
    },
    /// Time the cold start of one function binary (any build or revision) against the
    /// suite's Runtime API, offline.
    ColdStart {
        /// The function binary.
        #[arg(long, value_name = "PATH")]
        bin: PathBuf,
        /// Which event it is served: `api` (API Gateway) or `worker` (SQS).
        #[arg(long, default_value = "api")]
        function: String,
        /// Measured runs (two more are run first and dropped).
        #[arg(long, default_value_t = 20)]
        runs: usize,
        /// More environment, `NAME=VALUE` (repeatable).
        #[arg(long, value_name = "NAME=VALUE")]
        env: Vec<String>,
    },
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

/// Refuses, before the minutes of measuring, options whose output could not be written.
fn check_outputs(options: &Options) -> Result<(), String> {
    if let Some(out) = &options.out {
        let dir = out.parent().filter(|d| !d.as_os_str().is_empty());
        if dir.is_some_and(|d| !d.is_dir()) {
            return Err(format!("--out {}: no such directory", out.display()));
        }
    }
    if options.write {
        benchmarks_md::check(&root().join("BENCHMARKS.md"))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let options = Options::parse();
    match &options.command {
        Some(Sub::ServeLlm { delay_ms }) => {
            llm_server::serve(Duration::from_millis(*delay_ms));
            return ExitCode::SUCCESS;
        }
        Some(Sub::ColdStart {
            bin,
            function,
            runs,
            env,
        }) => {
            return match cold_start::run(bin, function, *runs, env) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("suite: {e}");
                    ExitCode::from(2)
                }
            };
        }
        None => {}
    }
    if let Err(e) = check_outputs(&options) {
        eprintln!("suite: {e}");
        return ExitCode::from(2);
    }
    let results = measure::measure(&options);
    let table = render::render(&results);
    // The table reaches stdout even when writing it elsewhere fails: a run is never lost.
    let written = match &options.out {
        Some(path) => {
            std::fs::write(path, &table).map_err(|e| format!("--out {}: {e}", path.display()))
        }
        None => Ok(()),
    };
    if options.out.is_none() || written.is_err() {
        println!("{table}");
    }
    let updated = if options.write {
        benchmarks_md::write(&root().join("BENCHMARKS.md"), &table, options.quick)
    } else {
        Ok(())
    };
    match written.and(updated) {
        Ok(()) => {
            if options.write {
                eprintln!("BENCHMARKS.md updated");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("suite: {e}");
            ExitCode::FAILURE
        }
    }
}
