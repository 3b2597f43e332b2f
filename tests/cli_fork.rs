//! `bounded-rag fork`, black-box on the offline provider and the local state folder: a fork
//! after a step carries the steps before it as they were and runs the rest, a step inside a
//! speculation's branches or past the end is a usage error naming the steps to use, and the
//! original run is unchanged.

use crate::support::happy_path::QUESTION;
use crate::support::run_body::stdout_json as json;
use crate::support::run_body::step_names as names;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn cli(state: &Path, speculation: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bounded-rag"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("STATE_DIR", state)
        .env("RUST_LOG", "error")
        .env("SPECULATION", speculation)
        .args(args)
        .output()
        .expect("binary runs")
}

#[test]
fn a_fork_carries_the_steps_before_it_and_runs_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let run = json(&cli(dir.path(), "off", &["ask", QUESTION, "--json"]));
    let run_id = run["run_id"].as_str().unwrap();
    let out = cli(
        dir.path(),
        "off",
        &["fork", run_id, "--from-step", "3", "--json"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fork = json(&out);
    assert_eq!(fork["status"], "completed");
    assert_eq!(fork["metadata"]["forked_from"]["run_id"], run_id);
    assert_eq!(fork["metadata"]["forked_from"]["step"], 3);
    assert_eq!(names(&fork), names(&run));
    let steps = |r: &Value| r["workflow_steps"].as_array().unwrap().clone();
    assert_eq!(steps(&fork)[..3], steps(&run)[..3]);
    assert_ne!(steps(&fork)[3]["timestamp"], steps(&run)[3]["timestamp"]);
    // The original reads as it was.
    let again = json(&cli(dir.path(), "off", &["status", run_id, "--json"]));
    assert_eq!(again, run);

    // Its last step has nothing after it; a step past the end does not exist: usage errors.
    for (step, says) in [("6", "ended at step 6"), ("7", "it has 6 step(s)")] {
        let out = cli(dir.path(), "off", &["fork", run_id, "--from-step", step]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{err}");
    }
    let out = cli(
        dir.path(),
        "off",
        &["fork", "no-such-run", "--from-step", "1"],
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_step_among_a_speculations_branches_names_the_steps_around_them() {
    let dir = tempfile::tempdir().unwrap();
    let run = json(&cli(dir.path(), "on", &["ask", QUESTION, "--json"]));
    let run_id = run["run_id"].as_str().unwrap();
    let steps = names(&run);
    assert_eq!(
        steps[..4],
        [
            "kg_retrieval",
            "route_question",
            "grade_documents",
            "generate"
        ],
        "{steps:?}"
    );
    // Steps 2..=4 ran at once; 1 (before them) and 4 (their join) can be forked from.
    let out = cli(dir.path(), "on", &["fork", run_id, "--from-step", "2"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("fork from step 1 or 4"), "{err}");
    for step in ["1", "4"] {
        let out = cli(
            dir.path(),
            "on",
            &["fork", run_id, "--from-step", step, "--json"],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(json(&out)["status"], "completed");
    }
}
