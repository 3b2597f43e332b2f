//! # bounded-rag
//!
//! An adaptive RAG workflow for AWS Lambda that always terminates.
//!
//! | module | owns |
//! |---|---|
//! | [`engine`] | generic bounded state-graph runner: step limit, deadline budget, retries, checkpoints, resume |
//! | [`rag`] | the adaptive-RAG workflow: state, nodes, routers, prompts, speculation, contextualize, request and response |
//! | [`runs`] | a run's life cycle: admission, start, continue, cancel, history, listing, completion events, threads; one call per entry need, typed refusals |
//! | [`llm`] | provider-neutral structured chat; OpenAI-compatible client; offline provider |
//! | [`kb`] | knowledge stores: the `Retriever` seam and every store with its reading and writing sides (bundle in a folder or on S3, PostgreSQL, Bedrock knowledge base), opened from `KB_URI` / `KB_PATH` |
//! | [`search`] | query mechanics: BM25, vectors and fusion, filters, graph hops, per-source cap, rerank; `WebSearch` (Tavily-compatible) |
//! | [`ingest`] | documents in: reading sources, chunking, embedding at ingest, writing them through `kb`; sync |
//! | [`embed`] | embeddings clients (OpenAI-compatible, Bedrock), used at ingest and for query vectors |
//! | [`store`] | versioned checkpoint stores: memory, local file, DynamoDB |
//! | [`config`] | settings from the environment, validated |
//! | [`aws`] | per-call timeouts of the AWS clients, from the deadline margin; AWS SDK errors classified; `S3Location` |
//! | `bedrock` | the Amazon Bedrock runtime client and its failures, shared by chat and embeddings |
//! | `http` | HTTP plumbing of the remote clients: retryable statuses, `Retry-After`, transport errors, scrubbing, the shared JSON endpoint |
//! | `clock` | the one injected clock (re-exported by [`engine`]) |
//! | [`entry`] | CLI, API Gateway, stream, SQS and sweeper handlers: parse input, call [`runs`], map its answers; the AWS adapters (SQS queue, EventBridge) |
//! | [`otlp`] | span export (OTLP/HTTP JSON) and trace context propagation |
#![warn(missing_docs)]

pub mod aws;
pub(crate) mod bedrock_client;
pub(crate) mod clock;
pub mod config;
pub mod embed;
pub mod engine;
pub mod entry;
pub mod error;
pub mod ingest;
pub mod kb;
pub mod llm;
pub mod otlp;
pub(crate) mod outbound;
pub mod rag;
pub mod runs;
pub mod search;
pub mod secrets;
pub mod spans;
pub mod store;
pub mod tls;
