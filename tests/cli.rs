//! The `bounded-rag` binary, black-box: offline answers, JSON output, input errors, resume and
//! ingest. Each test has its own state folder and a clean environment.

use crate::support::happy_path::{QUESTION, STEPS};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn cli(state: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bounded-rag"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("STATE_DIR", state)
        .env("RUST_LOG", "bounded_rag=info")
        // The sequential path's exact steps and events; a test may turn speculation on.
        .env("SPECULATION", "off")
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

#[test]
fn ask_answers_the_sample_question_offline_with_citations() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli(dir.path(), &[], &["ask", QUESTION]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Phytophthora palmivora"), "{text}");
    assert!(text.contains("[1]"), "{text}");
    assert!(
        text.contains("Sources:") && text.contains("kb://"),
        "{text}"
    );
    assert!(text.contains("completed · 6 steps"), "{text}");
    // progress per step on stderr
    let progress = stderr(&out);
    for node in STEPS {
        assert!(
            progress.contains(node),
            "no progress line for {node}: {progress}"
        );
    }
}

#[test]
fn json_output_is_the_http_response_body() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli(
        dir.path(),
        &[],
        &["ask", QUESTION, "--json", "--n-retrieved-documents", "2"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["status"], "completed");
    assert_eq!(v["success"], true);
    assert_eq!(v["question"], QUESTION);
    assert_eq!(v["metadata"]["provider"], "offline");
    assert_eq!(v["metadata"]["total_steps"], 6);
    assert_eq!(v["workflow_steps"].as_array().unwrap().len(), 6);
    assert_eq!(
        v["workflow_steps"][2]["details"]["graded"], 2,
        "the flag reached the request"
    );
    for step in v["workflow_steps"].as_array().unwrap() {
        assert!(step["timestamp"].as_str().unwrap().ends_with('Z'));
        assert!(step["processing_time"].as_f64().unwrap() >= 0.0);
    }
    assert!(!v["citations"].as_array().unwrap().is_empty());
}

#[test]
fn bad_flags_and_bad_environment_are_named_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli(
        dir.path(),
        &[],
        &["ask", QUESTION, "--n-retrieved-documents", "0"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--n-retrieved-documents"),
        "{}",
        stderr(&out)
    );

    let out = cli(dir.path(), &[], &["ask", ""]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--question") || stderr(&out).contains("question"),
        "{}",
        stderr(&out)
    );

    let out = cli(dir.path(), &[("MAX_RETRIES", "lots")], &["ask", QUESTION]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("MAX_RETRIES"), "{}", stderr(&out));

    let out = cli(
        dir.path(),
        &[("WORKFLOW_RECURSION_LIMIT", "0")],
        &["ask", QUESTION],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("WORKFLOW_RECURSION_LIMIT"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn step_limit_ends_best_effort_and_resume_continues_without_rerunning_steps() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli(
        dir.path(),
        &[("WORKFLOW_RECURSION_LIMIT", "3")],
        &["ask", QUESTION, "--json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let stopped = json(&out);
    assert_eq!(stopped["status"], "best_effort");
    assert_eq!(
        stopped["metadata"]["limits_hit"],
        serde_json::json!(["step_limit"])
    );
    assert_eq!(stopped["metadata"]["total_steps"], 3);
    assert!(stopped["answer"].as_str().unwrap().contains("step limit"));
    let run_id = stopped["run_id"].as_str().unwrap();

    // Same limit: resuming cannot go further, the stored answer comes back.
    let out = cli(
        dir.path(),
        &[("WORKFLOW_RECURSION_LIMIT", "3")],
        &["ask", "--resume", run_id, "--json"],
    );
    assert_eq!(json(&out)["metadata"]["total_steps"], 3);

    // Default limit: the run continues from step 4.
    let out = cli(dir.path(), &[], &["ask", "--resume", run_id, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let done = json(&out);
    assert_eq!(done["status"], "completed");
    assert_eq!(done["run_id"], run_id);
    let names: Vec<&str> = done["workflow_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, STEPS);
    assert_eq!(
        &done["workflow_steps"][0], &stopped["workflow_steps"][0],
        "the first steps were not run again"
    );

    let out = cli(dir.path(), &[], &["status", run_id, "--json"]);
    assert_eq!(json(&out), done);

    let out = cli(dir.path(), &[], &["ask", "--resume", "no-such-run"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not found"), "{}", stderr(&out));
}

#[tokio::test]
async fn a_leased_run_names_the_utc_time_and_how_long_to_wait() {
    use bounded_rag::store::{CheckpointStore, FileStore, Lease};
    let dir = tempfile::tempdir().unwrap();
    let out = cli(
        dir.path(),
        &[("WORKFLOW_RECURSION_LIMIT", "3")],
        &["ask", QUESTION, "--json"],
    );
    let run_id = json(&out)["run_id"].as_str().unwrap().to_owned();
    // Another invocation holds the run for the next 10 minutes.
    let store = FileStore::open(dir.path()).unwrap();
    let key = format!("run#{run_id}");
    let item = store.get(&key).await.unwrap().unwrap();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let lease = Lease {
        owner: "another-invocation".into(),
        expires_at_ms: now_ms + 600_000,
    };
    store
        .put(&key, item.version, &item.body, Some(&lease))
        .await
        .unwrap();

    let out = cli(dir.path(), &[], &["ask", "--resume", &run_id]);
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    let until = bounded_rag::clock::utc_seconds(lease.expires_at_ms);
    assert!(
        text.contains(&format!(
            "run {run_id} is being advanced by another invocation until {until} (in "
        )),
        "{text}"
    );
    assert!(
        text.contains(" s); retry after that, or follow its progress with `bounded-rag status"),
        "{text}"
    );
    assert!(!text.contains(&lease.expires_at_ms.to_string()), "{text}");
}

#[test]
fn ingest_builds_a_knowledge_base_the_ask_command_uses() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("mango.md"),
        "# Mango anthracnose\n\nMango anthracnose is caused by the fungus Colletotrichum gloeosporioides. \
         It produces black lesions on flowers and fruit during wet weather.\n",
    )
    .unwrap();
    let kb = dir.path().join("kb");
    let out = cli(
        dir.path(),
        &[],
        &[
            "ingest",
            docs.to_str().unwrap(),
            "--out",
            kb.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));

    let out = cli(
        dir.path(),
        &[("KB_PATH", kb.to_str().unwrap())],
        &["ask", "What causes mango anthracnose?", "--json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert!(
        v["answer"]
            .as_str()
            .unwrap()
            .contains("Colletotrichum gloeosporioides"),
        "{v}"
    );
    assert!(
        v["citations"][0]["url"]
            .as_str()
            .unwrap()
            .contains("mango.md"),
        "{v}"
    );

    let out = cli(
        dir.path(),
        &[],
        &["ingest", dir.path().join("missing").to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn ask_stream_prints_the_answer_then_sources_and_json_lines_with_every_event() {
    let dir = tempfile::tempdir().unwrap();
    let plain = cli(dir.path(), &[], &["ask", QUESTION]);
    let streamed = cli(dir.path(), &[], &["ask", "--stream", QUESTION]);
    assert!(streamed.status.success(), "{}", stderr(&streamed));
    let (plain, text) = (stdout(&plain), stdout(&streamed));
    let answer = plain.split("\n\nSources:").next().unwrap();
    assert!(text.starts_with(answer), "{text}");
    assert!(
        text.contains("Sources:") && text.contains("completed · 6 steps"),
        "{text}"
    );
    assert!(
        text.contains("7 model calls") && text.contains("(estimated)"),
        "{text}"
    );

    let out = cli(dir.path(), &[], &["ask", "--stream", "--json", QUESTION]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let names: Vec<String> = lines
        .iter()
        .map(|l| match l["event"].as_str().unwrap() {
            "step" => format!("step:{}", l["data"]["name"].as_str().unwrap()),
            other => other.to_owned(),
        })
        .collect();
    assert_eq!(
        names,
        [
            "step:route_question",
            "step:kg_retrieval",
            "step:grade_documents",
            "token",
            "step:generate",
            "step:grade_hallucinations",
            "step:grade_answer",
            "final",
        ]
    );
    let last = &lines.last().unwrap()["data"];
    assert_eq!(last["status"], "completed");
    assert_eq!(lines[3]["data"]["attempt"], 1);
    assert_eq!(lines[3]["data"]["text"], last["answer"]);
    assert_eq!(last["metadata"]["model_calls"], 7);
}

#[test]
fn max_tokens_below_one_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli(dir.path(), &[], &["ask", "--max-tokens", "0", QUESTION]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--max-tokens"), "{}", stderr(&out));
}

#[test]
fn ask_stream_with_speculation_searches_first_and_uses_the_speculative_answer() {
    let dir = tempfile::tempdir().unwrap();
    let on = [("SPECULATION", "on")];
    let out = cli(dir.path(), &on, &["ask", "--stream", "--json", QUESTION]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let names: Vec<String> = lines
        .iter()
        .map(|l| match l["event"].as_str().unwrap() {
            "step" => format!("step:{}", l["data"]["name"].as_str().unwrap()),
            other => other.to_owned(),
        })
        .collect();
    // The search first; routing, grading and the answer (its token before its step) in
    // whatever order they finish; then the checks.
    assert_eq!(names[0], "step:kg_retrieval");
    let mut fork = names[1..5].to_vec();
    let token = fork.iter().position(|n| n == "token").unwrap();
    assert!(token < fork.iter().position(|n| n == "step:generate").unwrap());
    fork.sort();
    assert_eq!(
        fork,
        [
            "step:generate",
            "step:grade_documents",
            "step:route_question",
            "token"
        ]
    );
    assert_eq!(
        names[5..],
        ["step:grade_hallucinations", "step:grade_answer", "final"]
    );
    let last = &lines.last().unwrap()["data"];
    assert_eq!(last["status"], "completed");
    assert_eq!(last["metadata"]["model_calls"], 7);
    assert_eq!(
        last["metadata"]["speculation"],
        serde_json::json!({"started": 1, "used": 1, "discarded": 0, "wasted_tokens": 0})
    );
}

#[test]
fn an_unreadable_rust_log_is_named_and_the_default_levels_are_used() {
    let dir = tempfile::tempdir().unwrap();
    let out = cli(
        dir.path(),
        &[("RUST_LOG", "bounded_rag=[{x}]")],
        &["ask", QUESTION],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("RUST_LOG not understood"), "{err}");
    assert!(err.contains("bounded_rag=[{x}]"), "{err}");
    // The default levels: one `step done` line per step of the sequential path.
    assert_eq!(err.matches("step done").count(), 6, "{err}");
    assert!(stdout(&out).contains("kb://"), "{}", stdout(&out));
}

#[test]
fn ingest_refuses_a_location_with_a_scheme_instead_of_writing_a_folder_named_s3() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("a.md"), "# A\n\nSome text about apples.\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bounded-rag"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(dir.path())
        .args(["ingest", "src", "--out", "s3://bucket/kb"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("`s3://` locations are not accepted"), "{err}");
    assert!(
        err.contains("kb publish FOLDER s3://BUCKET/PREFIX"),
        "{err}"
    );
    assert!(
        !dir.path().join("s3:").exists(),
        "no local folder named s3:"
    );
}
