//! The CLI on knowledge bundles on S3 (moto's S3 on loopback): `kb publish`, `kb list` and `ask`
//! with `KB_URI`, and the start-up error that names the key tried when the bundle cannot be
//! loaded. The bundles and the bucket are those of `kb_s3.rs`.

use crate::kb_s3::{bundles, store, version_of, QUESTION};
use crate::support;

use std::path::Path;
use support::moto::{moto, unique_name};

fn cli(endpoint: &str, state: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_bounded-rag"));
    cmd.env_clear()
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("STATE_DIR", state)
        .env("LLM_PROVIDER", "offline");
    cmd
}

#[tokio::test]
async fn the_cli_publishes_lists_and_answers_from_kb_uri() {
    let b = bundles();
    let (store, _) = store().await;
    let endpoint = moto().await.endpoint().to_owned();
    let uri = store.location().to_string();
    let state = tempfile::tempdir().unwrap();

    // Nothing published yet: a clear start-up error, exit code 2.
    let out = cli(&endpoint, state.path())
        .env("KB_URI", &uri)
        .args(["-q", "ask", QUESTION])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no bundle is published"), "{stderr}");

    let out = cli(&endpoint, state.path())
        .args(["kb", "publish"])
        .arg(&b.v2)
        .arg(&uri)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v2 = version_of(&b.v2);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&v2));

    let out = cli(&endpoint, state.path())
        .args(["kb", "list", &uri, "--json"])
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["version"], v2.as_str());
    assert_eq!(list[0]["current"], true);

    let out = cli(&endpoint, state.path())
        .env("KB_URI", &uri)
        .args(["-q", "ask", QUESTION, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let response: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(response["metadata"]["kb_version"], v2.as_str());
    assert_eq!(response["metadata"]["retrieval"], "bm25");
    let cited: Vec<&str> = response["citations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["url"].as_str())
        .collect();
    assert!(cited.contains(&"kb://zanthorix.md#1"), "{cited:?}");
}

#[tokio::test]
async fn an_unreachable_kb_uri_is_named_with_the_key_tried_and_what_to_check() {
    let state = tempfile::tempdir().unwrap();
    // A port nothing listens on, and a bucket moto does not have.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| format!("http://{addr}"))
        .unwrap();
    let absent = format!("s3://{}/team/durian", unique_name("absent").to_lowercase());
    let cases = [
        (closed, "s3://unreachable-kb/team/durian".to_owned()),
        (moto().await.endpoint().to_owned(), absent),
    ];
    for (endpoint, uri) in cases {
        let out = cli(&endpoint, state.path())
            .env("KB_URI", &uri)
            .args(["-q", "ask", QUESTION])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("cannot load KB_URI={uri}:")),
            "{stderr}"
        );
        assert!(stderr.contains(&format!("{uri}/current.json")), "{stderr}");
        assert!(stderr.contains("credentials"), "{stderr}");
        assert!(stderr.contains("`bounded-rag kb publish`"), "{stderr}");
        assert!(!stderr.contains("KB_PATH"), "{stderr}");
        for dump in ["DispatchFailure", "Error {", "aws_request_id"] {
            assert!(!stderr.contains(dump), "the SDK's debug dump: {stderr}");
        }
    }
}
