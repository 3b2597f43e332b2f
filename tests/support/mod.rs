//! Loopback servers and helpers shared by the integration tests.
#![allow(dead_code)]

pub mod agent_server;
pub mod api_event;
pub mod app;
pub mod bedrock_filter;
pub mod bedrock_server;
pub mod bin;
pub mod chat_request;
pub mod chat_stream;
pub mod counted;
pub mod embeddings_server;
pub mod event_source;
pub mod fault_proxy;
pub mod happy_path;
pub mod kb_corpus;
pub mod lambda_watch;
pub mod llm_server;
pub mod moto;
pub mod openapi;
pub mod otlp_receiver;
pub mod pg_tls;
pub mod phoenix;
pub mod postgres;
pub mod prompts;
pub mod providers;
pub mod rerank_server;
pub mod run_body;
pub mod scripted_http;
pub mod sse;
pub mod store_conformance;
pub mod sync_pump;
pub mod sync_records_conformance;
pub mod sync_stack;
pub mod tap;
pub mod web_server;

/// Writes each `(name, text)` of `files` into `dir` (created when missing).
pub fn write_files(dir: &std::path::Path, files: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// Polls `done` every 20 ms for up to 30 s; whether it came true (the caller asserts, with what
/// it knows of the failure).
pub async fn wait_until(done: impl Fn() -> bool) -> bool {
    for _ in 0..1_500 {
        if done() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    done()
}
