//! The local stack's scripts (`infra/local/`), black-box: what `provision.py` gives the
//! functions, how long `sqs_pump.py` lets an invocation run, and what it says when a function
//! stops answering.

use crate::support;

use aws_sdk_sqs::types::QueueAttributeName;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use support::moto::{moto, unique_name};

const CONFIGURATION: &str = include_str!("../docs/src/configuration.md");
const TEMPLATE: &str = include_str!("../template.yaml");
/// Documented settings provision.py must not copy into the env file: the keys go into the
/// secret, the rest are the resources it creates.
const NOT_FORWARDED: [&str; 6] = [
    "LLM_API_KEY",
    "WEB_SEARCH_API_KEY",
    "EMBEDDINGS_API_KEY",
    "CHECKPOINT_TABLE",
    "WORK_QUEUE_URL",
    "SECRETS_ID",
];

/// The venv's python: next to `MOTO_SERVER_BIN`, else `.local/venv/bin/python`.
fn python() -> PathBuf {
    let venv_bin = std::env::var_os("MOTO_SERVER_BIN")
        .map(PathBuf::from)
        .and_then(|moto| moto.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".local/venv/bin"));
    let python = venv_bin.join("python");
    assert!(
        python.is_file(),
        "{} not found: run scripts/setup-test-tools.sh",
        python.display()
    );
    python
}

/// The variable names of the configuration table (docs/src/configuration.md).
fn documented_settings() -> Vec<String> {
    let section = CONFIGURATION
        .split("\n## Configuration")
        .nth(1)
        .expect("a Configuration section")
        .split("\n## ")
        .next()
        .unwrap();
    section
        .lines()
        .filter_map(|line| line.strip_prefix("| `")?.split('`').next())
        .filter(|name| {
            name.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        })
        .map(str::to_owned)
        .collect()
}

/// `Timeout:` of a function resource in template.yaml, in seconds.
fn template_timeout(resource: &str) -> u64 {
    let start = TEMPLATE
        .find(&format!("\n  {resource}:\n"))
        .unwrap_or_else(|| panic!("{resource} in template.yaml"));
    TEMPLATE[start + 1..]
        .lines()
        .skip(1)
        .take_while(|l| l.is_empty() || l.starts_with("    "))
        .find_map(|l| l.trim().strip_prefix("Timeout: "))
        .unwrap_or_else(|| panic!("{resource} has no Timeout"))
        .parse()
        .expect("a number of seconds")
}

#[tokio::test]
async fn provision_forwards_every_documented_setting_into_the_functions_env() {
    let moto = moto().await;
    let documented = documented_settings();
    for expected in [
        "MAX_TOKENS_PER_RUN",
        "LLM_CACHE_TTL_SECONDS",
        "RUN_TIMEOUT_MS",
    ] {
        assert!(documented.iter().any(|d| d == expected), "{documented:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let env_file = dir.path().join("lambda.env");
    let table = unique_name("provisioned");
    let mut command = Command::new(python());
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("infra/local/provision.py"))
        .args(["--endpoint", moto.endpoint()])
        .args(["--table", &table])
        .args(["--queue", &unique_name("work")])
        .args(["--dlq", &unique_name("dlq")])
        .args(["--secret-id", &unique_name("keys")])
        .arg("--env-file")
        .arg(&env_file)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    // A distinct value per setting, so a value that lands under the wrong name shows.
    let value = |name: &str| format!("value-of-{}", name.to_ascii_lowercase());
    for name in &documented {
        command.env(name, value(name));
    }
    command.env("LLM_PROVIDER", "openai");
    let out = command.output().expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let text = std::fs::read_to_string(&env_file).unwrap();
    let env: Vec<(&str, &str)> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (key, quoted) = l.split_once('=')?;
            Some((key, quoted.trim_matches('\'')))
        })
        .collect();
    let get = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
    for name in &documented {
        if NOT_FORWARDED.contains(&name.as_str()) {
            continue;
        }
        let expected = if name == "LLM_PROVIDER" {
            "openai".to_owned()
        } else {
            value(name)
        };
        assert_eq!(get(name), Some(expected.as_str()), "{name} in\n{text}");
    }
    assert_eq!(get("CHECKPOINT_TABLE"), Some(table.as_str()));
    assert!(get("WORK_QUEUE_URL").is_some_and(|u| u.starts_with("http://127.0.0.1")));
    assert!(
        !text.contains("value-of-llm_api_key"),
        "a key in the env file"
    );
    assert!(
        !text.contains("value-of-web_search_api_key"),
        "a key in the env file"
    );
    assert!(
        !text.contains("value-of-embeddings_api_key"),
        "a key in the env file"
    );

    // The table has the sweeper's index and the owner listing's, as template.yaml declares.
    let described = moto
        .dynamodb()
        .await
        .describe_table()
        .table_name(&table)
        .send()
        .await
        .unwrap();
    let indexes = described.table().unwrap().global_secondary_indexes();
    let names: Vec<_> = indexes.iter().filter_map(|i| i.index_name()).collect();
    assert_eq!(names, ["leases", "by_owner"]);
}

#[test]
fn the_pump_waits_as_long_as_lambda_lets_each_function_run() {
    assert_eq!(template_timeout("WorkerFunction"), 120);
    let out = Command::new(python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("infra/local/sqs_pump.py"))
        .arg("--show-config")
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        config["timeout"].as_f64(),
        Some(template_timeout("WorkerFunction") as f64)
    );
    assert_eq!(
        config["sweep_timeout"].as_f64(),
        Some(template_timeout("SweeperFunction") as f64)
    );
    assert_eq!(config["sweep_every"].as_f64(), Some(60.0));
    assert_eq!(config["dead_after"].as_u64(), Some(2));
}

/// Runs the pump against `invoke` until it says what to do about a function that stopped
/// answering; returns its stderr up to that line (the pump is killed then).
fn pump_until_it_gives_up(endpoint: &str, queue_url: &str, invoke: &str) -> Vec<String> {
    let mut pump = Command::new(python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("infra/local/sqs_pump.py"))
        .args([
            "--endpoint",
            endpoint,
            "--queue-url",
            queue_url,
            "--invoke",
            invoke,
        ])
        .args(["--timeout", "0.5", "--sweep-every", "0"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python runs");
    let stderr = BufReader::new(pump.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    let gave_up = loop {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => {
                let done = line.contains("in a row");
                lines.push(line);
                if done {
                    break true;
                }
            }
            Err(_) => break false,
        }
    };
    let _ = pump.kill();
    let _ = pump.wait();
    assert!(
        gave_up,
        "the pump never said what to do:\n{}",
        lines.join("\n")
    );
    lines
}

#[tokio::test]
async fn the_pump_says_to_restart_the_stack_once_a_function_stops_answering() {
    let moto = moto().await;
    let sqs = moto.sqs().await;
    // Visible again at once: every receive hands the pump the same undeleted message.
    let queue_url = sqs
        .create_queue()
        .queue_name(unique_name("pump"))
        .attributes(QueueAttributeName::VisibilityTimeout, "0")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    sqs.send_message()
        .queue_url(&queue_url)
        .message_body(r#"{"run_id":"stuck"}"#)
        .send()
        .await
        .unwrap();

    // An emulator whose worker process died: it takes every invocation and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let invoke = format!("http://{}", silent.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for connection in silent.incoming() {
            held.push(connection);
        }
    });
    let lines = pump_until_it_gives_up(moto.endpoint(), &queue_url, &invoke);
    let failed = lines.iter().filter(|l| l.contains("invoke failed")).count();
    assert_eq!(failed, 2, "{lines:#?}");
    let advice = lines.last().unwrap();
    for expected in [
        "worker has not answered 2 invocations in a row",
        "timed out",
        "never starts it again",
        "Restart the local stack",
        "scripts/local-stack.sh",
    ] {
        assert!(advice.contains(expected), "{expected:?} in {advice}");
    }

    // No emulator at all: the same count, and it says nothing listens.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| format!("http://{addr}"))
        .unwrap();
    let lines = pump_until_it_gives_up(moto.endpoint(), &queue_url, &closed);
    let failed = lines.iter().filter(|l| l.contains("invoke failed")).count();
    assert_eq!(failed, 2, "{lines:#?}");
    let advice = lines.last().unwrap();
    assert!(
        advice.contains(&format!("nothing answers at {closed}")),
        "{advice}"
    );
    assert!(advice.contains("Restart the local stack"), "{advice}");
}
