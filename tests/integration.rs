//! The integration tests, one binary. Each `tests/NAME.rs` is a module here (run one file's tests
//! with `cargo test --test integration NAME::`). One binary instead of one per file: every test
//! binary links the whole crate and the AWS SDKs (about 100 MB each in a debug build), and 54 of
//! them filled CI's disk; one also starts the shared servers (moto, PostgreSQL) once per run.

mod playground;
mod support;

mod answer_floor;
mod aws_workflow;
mod bedrock_cli;
mod cli;
mod completion_events;
mod config_env;
mod crash;
mod entry_http;
mod entry_sqs;
mod faults;
mod http_rate_limit;
mod kb_bedrock;
mod kb_bundle;
mod kb_config;
mod kb_conformance;
mod kb_eval;
mod kb_filters;
mod kb_formats;
mod kb_graph;
mod kb_hybrid;
mod kb_postgres;
mod kb_rerank;
mod kb_s3;
mod kb_sync;
mod kb_tuning;
mod lambda_local;
mod lambda_stream;
mod lambda_sync;
mod lambda_threads;
mod llm_bedrock;
mod llm_cache;
mod llm_offline;
mod llm_openai;
mod llm_reasoning;
mod local_stack;
mod openapi;
mod openapi_nulls;
mod otlp_export;
mod playground_browser;
mod playground_live;
mod prompts_wire;
mod reasoning_run;
mod retrieval_kb;
mod run_control;
mod run_events;
mod secrets_manager;
mod serve;
mod store_dynamodb;
mod store_local;
mod store_sync_records;
mod stream_resume;
mod sweeper;
mod sync_bench;
mod threads;
mod threads_wire;
mod web_search;
mod workflow_bounds;
mod workflow_resume;
mod workflow_version;
mod workflow_web;
