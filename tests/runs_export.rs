//! `bounded-rag runs export` black-box, offline model and the embedded sample knowledge base:
//! ten runs (eight completed, two best-effort at a step limit, two of them turns of a thread)
//! exported as JSON Lines, filtered exactly by status, creation time and thread, and read by
//! `bounded-rag eval` as they are, which finds every run's cited sources cited again (cited
//! share 1.0). The same runs on DynamoDB (moto) export the same lines. Bad filters are refused,
//! naming the problem.
//!
//! The DynamoDB test needs `scripts/setup-test-tools.sh` (moto_server in `.local/venv`).

use crate::support;

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;
use support::moto::moto;

/// Asks made at a step limit of 2: best-effort, with the extractive cited answer.
const BEST_EFFORT: [usize; 2] = [3, 7];
/// Asks made as the turns of thread `t`.
const THREADED: [usize; 2] = [5, 6];

fn cli(state: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut vars = vec![("LLM_PROVIDER", "offline"), ("SPECULATION", "off")];
    vars.extend_from_slice(env);
    support::bin::run(state, &[], &vars, args)
}

fn ok(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The first ten questions of the sample's labelled set.
fn questions() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/eval/durian.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .take(10)
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["question"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// Makes the ten runs; returns each run's `ask --json` body, in the order asked.
fn make_runs(state: &Path, env: &[(&str, &str)]) -> Vec<Value> {
    questions()
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let mut vars = env.to_vec();
            if BEST_EFFORT.contains(&i) {
                vars.push(("WORKFLOW_RECURSION_LIMIT", "2"));
            }
            let mut args = vec!["ask", q.as_str(), "--json"];
            if THREADED.contains(&i) {
                args.extend(["--thread", "t"]);
            }
            serde_json::from_str(&ok(&cli(state, &vars, &args))).unwrap()
        })
        .collect()
}

/// `runs export ARGS` as parsed lines.
fn export(state: &Path, env: &[(&str, &str)], args: &[&str]) -> Vec<Value> {
    let mut all = vec!["runs", "export"];
    all.extend_from_slice(args);
    ok(&cli(state, env, &all))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn ids(lines: &[Value]) -> BTreeSet<String> {
    lines
        .iter()
        .map(|l| l["run_id"].as_str().unwrap().to_owned())
        .collect()
}

/// Makes the runs on the store `env` points at, checks every filter against them, and returns
/// the whole export (newest first).
fn exported(state: &Path, env: &[(&str, &str)]) -> Vec<Value> {
    let asked = make_runs(state, env);
    let all = export(state, env, &[]);
    assert_eq!(all.len(), 10);
    // Newest first: the reverse of the order asked.
    let newest_first: Vec<&Value> = asked.iter().rev().map(|a| &a["run_id"]).collect();
    let lines: Vec<&Value> = all.iter().map(|l| &l["run_id"]).collect();
    assert_eq!(lines, newest_first);
    for (line, run) in all.iter().zip(asked.iter().rev()) {
        // Eval's fields and those for a person, nothing else (serde_json sorts the keys).
        let keys: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "answer",
                "created_at",
                "expected_sources",
                "question",
                "run_id",
                "status"
            ]
        );
        assert_eq!(line["question"], run["question"]);
        assert_eq!(line["answer"], run["answer"]);
        assert_eq!(line["status"], run["status"]);
        // The cited documents, once each, as labelled sets name them.
        let mut cited: Vec<String> = Vec::new();
        for c in run["citations"].as_array().unwrap() {
            let url = c["url"].as_str().unwrap();
            let doc = url
                .strip_prefix("kb://")
                .unwrap()
                .split('#')
                .next()
                .unwrap();
            if !cited.iter().any(|d| d == doc) {
                cited.push(doc.to_owned());
            }
        }
        assert!(!cited.is_empty(), "{run}");
        assert_eq!(line["expected_sources"], serde_json::json!(cited));
    }

    let completed = export(state, env, &["--status", "completed"]);
    let best_effort = export(state, env, &["--status", "best_effort"]);
    assert_eq!((completed.len(), best_effort.len()), (8, 2));
    let of = |indices: &[usize]| -> BTreeSet<String> {
        indices
            .iter()
            .map(|&i| asked[i]["run_id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&best_effort), of(&BEST_EFFORT));
    assert!(export(state, env, &["--status", "failed"]).is_empty());

    // Since the fifth newest run's creation: exactly the five newest.
    let since = all[4]["created_at"].as_str().unwrap();
    let recent = export(state, env, &["--since", since]);
    assert_eq!(ids(&recent), ids(&all[..5]));
    let since_and_completed = export(state, env, &["--since", since, "--status", "completed"]);
    assert_eq!(since_and_completed.len(), 5 - 1);

    let thread = export(state, env, &["--thread", "t"]);
    assert_eq!(ids(&thread), of(&THREADED));
    assert!(export(state, env, &["--thread", "none"]).is_empty());
    all
}

/// A line without what differs between two stores holding the same runs.
fn comparable(line: &Value) -> Value {
    let mut line = line.clone();
    let object = line.as_object_mut().unwrap();
    object.remove("run_id");
    object.remove("created_at");
    line
}

#[test]
fn exported_runs_are_an_eval_set_that_finds_their_sources_cited() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let all = exported(state, &[]);

    let file = state.join("from-runs.jsonl");
    let file_arg = file.to_str().unwrap();
    let out = cli(state, &[], &["runs", "export", "--out", file_arg]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("exported 10 runs"),
        "{out:?}"
    );
    assert!(ok(&out).is_empty());
    let written = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<Value> = written
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines, all);

    let report: Value =
        serde_json::from_str(&ok(&cli(state, &[], &["eval", file_arg, "--json"]))).unwrap();
    assert_eq!(report["questions"], 10);
    assert_eq!(report["cited_share"], 1.0);
}

#[test]
fn bad_filters_are_refused_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    let out = cli(state, &[], &["runs", "export", "--status", "done"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--status"), "{stderr}");
    assert!(
        stderr.contains(
            "unknown status `done`: use one of running, completed, best_effort, suspended, \
             failed, cancelled"
        ),
        "{stderr}"
    );
    let out = cli(state, &[], &["runs", "export", "--since", "2026-13-01"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--since"), "{stderr}");
    assert!(
        stderr.contains("`2026-13-01` is not an RFC 3339 time"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[tokio::test]
async fn the_same_runs_on_dynamodb_export_the_same_lines() {
    let moto = moto().await;
    let table = moto.create_table().await;
    let mut env = moto.function_env();
    env.push(("CHECKPOINT_TABLE", table));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();

    let dynamo_dir = tempfile::tempdir().unwrap();
    let on_dynamo = exported(dynamo_dir.path(), &env);
    // Nothing was written to the local store.
    assert!(
        !dynamo_dir.path().join("runs").exists()
            || std::fs::read_dir(dynamo_dir.path().join("runs"))
                .unwrap()
                .next()
                .is_none()
    );

    let local_dir = tempfile::tempdir().unwrap();
    let local = exported(local_dir.path(), &[]);
    let comparable_lines = |lines: &[Value]| lines.iter().map(comparable).collect::<Vec<_>>();
    assert_eq!(comparable_lines(&on_dynamo), comparable_lines(&local));
}
