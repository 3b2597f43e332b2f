//! # bounded-rag
//!
//! An adaptive RAG workflow for AWS Lambda that always terminates.
//!
//! | module | owns |
//! |---|---|
//! | [`entry`] | CLI, API Gateway, stream, SQS, sweeper and sync handlers, the local server: parse input, call [`runs`], map its answers; the AWS adapters (SQS queues, EventBridge) |
//! | [`runs`] | a run's life cycle: admission, start, continue, cancel, history, listing, completion events, threads; one call per entry need, typed refusals |
//! | [`rag`] | the adaptive-RAG workflow: state, nodes, routers, prompts, speculation, contextualize, request and response |
//! | [`llm`] | provider-neutral structured chat and the plain-text answer; OpenAI-compatible and Bedrock clients; offline and scripted providers; the reply cache |
//! | [`kb`] | knowledge stores: the [`kb::Retriever`] seam and every store with its reading and writing sides (bundle in a folder or on S3, PostgreSQL, Bedrock knowledge base), opened from `KB_URI` / `KB_PATH` |
//! | [`search`] | query mechanics: BM25, vectors and fusion, filters, graph hops, per-source cap, rerank; `WebSearch` (Tavily-compatible) |
//! | [`ingest`] | documents in: reading sources, chunking, embedding at ingest, writing through [`kb`]; `kb sync` and the sync function's job |
//! | [`embed`] | embeddings clients (OpenAI-compatible, Bedrock), used at ingest and for query vectors |
//! | [`engine`] | generic bounded state-graph runner: step limit, deadline budget, retries, checkpoints, resume |
//! | [`store`] | versioned checkpoint stores (memory, local file, DynamoDB), cache items, threads, the sync function's records; every key typed |
//! | [`config`] | settings from the environment, validated; every default |
//! | [`secrets`] | secret values that never print, Secrets Manager with caching |
//! | [`aws`] | per-call timeouts of the AWS clients, from the deadline margin; AWS SDK errors classified; `S3Location` |
//! | `bedrock_client` | the Amazon Bedrock runtime client and its failures, shared by chat, embeddings and rerank |
//! | `outbound` | HTTP plumbing of the outgoing clients: retryable statuses, `Retry-After`, transport errors, scrubbing, the shared JSON endpoint |
//! | [`tls`] | one TLS stack (rustls, *ring*) for every outbound connection |
//! | [`events`] | the EventBridge event seam: `EventSink`, the kinds of event (`Run Finished`, `Run Waiting`, `Sync Finished`), `SinkError` (a run's SSE events are `rag`'s `run_events`) |
//! | [`error`] | [`error::Classify`]: transient or permanent, shared by every layer's error |
//! | `clock` | the one injected clock, and the time texts (RFC 3339, UTC seconds) |
//! | [`otlp`] | span export (OTLP/HTTP protobuf, one request per invocation), trace context propagation, the GenAI metrics |
//! | [`spans`] | the target of the spans that exist for trace export only, and the step span |
//! | `genai` | the GenAI conventions' spans: run, model call, embeddings, retrieval, tool |
//!
//! The arrows point one way: entry → runs → rag → llm / search / kb → engine → store;
//! ingest → kb → search.
#![warn(missing_docs)]

pub mod aws;
pub(crate) mod bedrock_client;
pub mod clock;
pub mod config;
pub mod embed;
pub mod engine;
pub mod entry;
pub mod error;
pub mod events;
pub(crate) mod genai;
pub mod ingest;
pub mod kb;
pub mod knowledge;
pub mod llm;
pub mod otlp;
pub(crate) mod outbound;
pub mod rag;
pub mod retry;
pub mod runs;
pub mod search;
pub mod secrets;
pub mod spans;
pub mod store;
pub mod tls;
pub mod usage;
