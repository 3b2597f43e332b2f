//! The local stack's scripts (`infra/local/`), black-box: what `provision.py` gives the
//! functions and how long `sqs_pump.py` lets an invocation run.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::moto::{moto, unique_name};

const README: &str = include_str!("../README.md");
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

/// The variable names of README.md's configuration table.
fn documented_settings() -> Vec<String> {
    let section = README
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

    // The table has the sweeper's index, as template.yaml declares it.
    let described = moto
        .dynamodb()
        .await
        .describe_table()
        .table_name(&table)
        .send()
        .await
        .unwrap();
    let indexes = described.table().unwrap().global_secondary_indexes();
    assert_eq!(indexes.len(), 1);
    assert_eq!(indexes[0].index_name(), Some("leases"));
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
}
