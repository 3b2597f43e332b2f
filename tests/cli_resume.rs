//! `bounded-rag resume` and `ask` with a run that waits, black-box on the offline provider
//! and the local state folder (speculation on, the default): a question whose subject nothing
//! names waits having run one step, `ask` off a terminal says how to answer it, and `resume`
//! goes on from the checkpoint, running the clarifying step no second time.

use crate::support::run_body::stdout_json as json;
use crate::support::run_body::step_names as names;
use std::path::Path;
use std::process::Output;

fn cli(state: &Path, args: &[&str]) -> Output {
    crate::support::bin::run(state, &[], &[("RUST_LOG", "error")], args)
}

#[test]
fn a_waiting_run_says_how_to_answer_and_resume_goes_on_from_its_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let waiting = json(&cli(dir.path(), &["ask", "How do I treat it?", "--json"]));
    assert_eq!(waiting["status"], "waiting", "{waiting}");
    assert_eq!(names(&waiting), ["clarify"]);
    let run_id = waiting["run_id"].as_str().unwrap();

    // Not at a terminal, `ask` prints what the run asks and the command that answers it.
    let text = cli(dir.path(), &["ask", "What is it?"]);
    assert!(text.status.success());
    let shown = String::from_utf8_lossy(&text.stdout);
    assert!(
        shown.contains("The run asks: What does \"it\" refer to"),
        "{shown}"
    );
    assert!(shown.contains("bounded-rag resume "), "{shown}");

    // An answer of the wrong kind is a usage error; the right one completes the run.
    let wrong = cli(dir.path(), &["resume", run_id, "--approve"]);
    assert_eq!(
        wrong.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&wrong.stderr)
    );
    let out = cli(
        dir.path(),
        &[
            "resume",
            run_id,
            "--answer",
            "durian patch canker",
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let done = json(&out);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["metadata"]["clarified_question"],
        "How do I treat durian patch canker?"
    );
    let steps = names(&done);
    assert_eq!(
        steps.iter().filter(|s| **s == "clarify").count(),
        1,
        "{steps:?}"
    );
    assert_eq!(steps[0], "clarify");
    assert!(steps.len() > 1, "{steps:?}");
    // It no longer waits: a second answer is refused.
    let again = cli(dir.path(), &["resume", run_id, "--answer", "durian"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("not waiting"));
    // Exactly one of --answer, --approve and --deny.
    assert_eq!(cli(dir.path(), &["resume", run_id]).status.code(), Some(2));
}
