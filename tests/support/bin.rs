//! The `bounded-rag` binary run black-box: a clean environment with `HOME` and `STATE_DIR`
//! under the test's folder, a scripted server's variables, then the test's own.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `bounded-rag ARGS` with `server` (a scripted server's variables) and `env` set.
pub fn run(
    state: &Path,
    server: &[(&'static str, String)],
    env: &[(&str, &str)],
    args: &[&str],
) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bounded-rag"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", state)
        .env("STATE_DIR", state.join("runs"))
        .args(args);
    for (k, v) in server {
        cmd.env(k, v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("binary runs")
}
