//! Loopback servers and helpers shared by the integration tests.
#![allow(dead_code)]

pub mod agent_server;
pub mod app;
pub mod bedrock_filter;
pub mod bedrock_server;
pub mod bin;
pub mod counted;
pub mod embeddings_server;
pub mod event_source;
pub mod fault_proxy;
pub mod happy_path;
pub mod kb_corpus;
pub mod lambda_watch;
pub mod llm_server;
pub mod moto;
pub mod otlp_receiver;
pub mod pg_tls;
pub mod phoenix;
pub mod postgres;
pub mod providers;
pub mod rerank_server;
pub mod scripted_http;
pub mod store_conformance;
pub mod sync_pump;
pub mod sync_records_conformance;
pub mod tap;
pub mod web_server;
