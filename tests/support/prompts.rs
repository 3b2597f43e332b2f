//! The `bounded-rag` binary asked against a scripted model server, and the prompts it sent
//! read back: the binary run with a clean environment (the sequential path), its JSON answer,
//! the recorded calls of one node, their system and user messages, and the prompt's own
//! structure (its labels and numbered document headings).

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

use super::llm_server::ScriptedLlm;
use super::scripted_http::Call;

/// Runs the binary with a clean environment plus `env`, off the async runtime.
pub async fn cli(state: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bounded-rag"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("STATE_DIR", state)
        // The sequential path's exact calls.
        .env("SPECULATION", "off")
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    tokio::task::spawn_blocking(move || cmd.output().expect("binary runs"))
        .await
        .unwrap()
}

pub fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// The system and user messages of a recorded chat request.
pub fn prompt(call: &Call) -> (String, String) {
    let text = |i: usize| {
        call.body["messages"][i]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    (text(0), text(1))
}

/// The calls recorded for `name`.
pub fn calls(llm: &ScriptedLlm, name: &str) -> Vec<Call> {
    llm.recorded()
        .into_iter()
        .filter(|c| c.name() == name)
        .collect()
}

pub fn write(dir: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(name), text).unwrap();
}

/// `ingest SRC --out OUT` with `extra` arguments, run in `work`.
pub async fn ingest(work: &Path, src: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "ingest",
        src.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    cli(work, &[], &args).await
}

/// True for a line of the prompt's own structure: a label or a document heading (`[n] ...`).
pub fn is_structure(line: &str) -> bool {
    const LABELS: [&str; 6] = [
        "Question:",
        "Documents:",
        "Document:",
        "Answer to check:",
        "Conversation so far:",
        "Knowledge base:",
    ];
    LABELS.iter().any(|l| line.starts_with(l)) || heading(line).is_some()
}

/// The number of a document heading line (`[n] title`).
pub fn heading(line: &str) -> Option<usize> {
    let rest = line.strip_prefix('[')?;
    let end = rest.find(']')?;
    rest[..end].parse().ok()
}

/// The prompt's own lines of `user` (labels and document headings, in order) and how many
/// items it quotes (a document per heading, the answer per `Answer to check:`).
pub fn skeleton(user: &str) -> (Vec<String>, usize) {
    let lines: Vec<String> = user
        .lines()
        .filter(|l| is_structure(l))
        .map(str::to_owned)
        .collect();
    let items = lines
        .iter()
        .filter(|l| heading(l).is_some() || l.starts_with("Answer to check:"))
        .count();
    (lines, items)
}
