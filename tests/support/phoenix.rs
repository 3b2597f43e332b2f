//! Arize Phoenix on loopback (`scripts/phoenix.sh`), started once per test process, and its own
//! REST API to read spans back: `GET /v1/projects/{project}/spans`, each span with its
//! `span_kind` (from `openinference.span.kind`, or derived by Phoenix from the GenAI
//! conventions' `gen_ai.operation.name`), `context.trace_id` and its attributes as dotted keys.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The server's URL (`BOUNDED_RAG_PHOENIX_URL` when set), started when needed.
pub fn server_url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(url) = std::env::var("BOUNDED_RAG_PHOENIX_URL") {
            return url;
        }
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("phoenix");
        let out = Command::new("bash")
            .arg(root.join("scripts/phoenix.sh"))
            .arg("start")
            .arg(&dir)
            .stderr(Stdio::inherit())
            .output()
            .expect("scripts/phoenix.sh runs");
        assert!(out.status.success(), "scripts/phoenix.sh start failed");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    })
}

/// A project name no other test run used.
pub fn project(name: &str) -> String {
    format!("{name}-{}", uuid::Uuid::new_v4().simple())
}

/// The spans of `project`, read until `done` holds for them (Phoenix stores what it receives
/// in the background), for at most 60 s.
pub async fn spans_until(project: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let client = bounded_rag::tls::reqwest_builder().build().unwrap();
    let url = format!("{}/v1/projects/{project}/spans?limit=1000", server_url());
    let started = Instant::now();
    loop {
        let response = client.get(&url).send().await.expect("phoenix answers");
        let spans = if response.status().is_success() {
            let body: Value = response.json().await.unwrap();
            body["data"].as_array().cloned().unwrap_or_default()
        } else {
            Vec::new()
        };
        if done(&spans) {
            return spans;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "phoenix project {project}: {} spans after 60 s: {spans:#?}",
            spans.len()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The spans of one kind (`LLM`, `RETRIEVER`, `EMBEDDING`, `CHAIN`, `AGENT`, `TOOL`).
pub fn of_kind<'a>(spans: &'a [Value], kind: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["span_kind"] == kind).collect()
}

/// The sources of a retriever span's documents, in order (`retrieval.documents.{i}.document.
/// metadata.source`, as Phoenix flattens them).
pub fn document_sources(span: &Value) -> Vec<String> {
    (0..)
        .map_while(|i| {
            let key = format!("retrieval.documents.{i}.document.metadata.source");
            span["attributes"][key.as_str()].as_str().map(str::to_owned)
        })
        .collect()
}
