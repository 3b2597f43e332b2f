//! End-to-end runs through the real OpenAI-compatible client, and one worker invocation on a
//! batch of 10 SQS records, against the scripted server process.

use super::llm_server::LlmServer;
use super::process::{ms, Samples};
use aws_lambda_events::event::sqs::SqsEvent;
use bounded_rag::clock::{Clock, SystemClock};
use bounded_rag::config::Settings;
use bounded_rag::engine::Budget;
use bounded_rag::entry::{sqs, App};
use bounded_rag::llm::{OpenAiConfig, OpenAiModel};
use bounded_rag::rag::{RagGraph, RagLimits, RunRequest, RunStatus};
use bounded_rag::runs::WorkMessage;
use bounded_rag::runs::Workflow;
use bounded_rag::store::MemoryStore;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The question of every run: routed to the knowledge base, 3 documents, 7 model calls.
pub const QUESTION: &str = "What causes patch canker in durian?";
/// Model calls of the typical run: route, 3 document grades, generate, 2 answer grades.
pub const CALLS_PER_RUN: u64 = 7;

/// The graph every benchmark uses: real client, embedded knowledge base, no web search.
pub fn graph(server: &LlmServer, model: &str) -> RagGraph {
    let client = OpenAiModel::new(OpenAiConfig::new(server.base_url(), model)).expect("client");
    let kb = bounded_rag::ingest::sample_kb().expect("embedded knowledge base");
    RagGraph::new(Arc::new(client), Arc::new(kb), None, RagLimits::default())
}

/// Sequential runs against one server.
#[derive(Debug, Clone)]
pub struct E2e {
    /// Scripted delay per model reply.
    pub delay: Duration,
    /// Runs per second, one run at a time.
    pub runs_per_sec: f64,
    /// Wall time per run, ms.
    pub wall_ms: Samples,
    /// Server's own time per run, ms.
    pub server_ms: Samples,
    /// Wall minus server time per run, ms.
    pub overhead_ms: Samples,
    /// Steps per run.
    pub steps: usize,
}

/// `runs` sequential runs of the typical 7-call workflow (after `warmup` untimed ones), with
/// an in-memory checkpoint store (one conditional write per step, as in production).
pub async fn sequential(server: &LlmServer, warmup: usize, runs: usize) -> E2e {
    let graph = graph(server, "bench");
    let store = MemoryStore::new();
    let workflow = Workflow::new(&graph, &store, &SystemClock);
    let mut wall = Vec::new();
    let mut server_time = Vec::new();
    let mut overhead = Vec::new();
    let mut steps = 0;
    let mut total = Duration::ZERO;
    for i in 0..warmup + runs {
        let budget = Budget::new(50, SystemClock.now_ms() + 60_000);
        let run_id = format!("e2e-{}-{i}", server.delay().as_millis());
        let before = server.stats();
        let started = Instant::now();
        let response = workflow
            .run_new(&run_id, RunRequest::new(QUESTION), &budget)
            .await
            .expect("run");
        let elapsed = started.elapsed();
        let served = server.stats() - before;
        assert_eq!(response.status, RunStatus::Completed, "{response:?}");
        assert_eq!(served.requests, CALLS_PER_RUN, "a 7-call run");
        if i < warmup {
            continue;
        }
        steps = response.workflow_steps.len();
        total += elapsed;
        wall.push(ms(elapsed));
        server_time.push(ms(served.busy));
        overhead.push(ms(elapsed.saturating_sub(served.busy)));
    }
    E2e {
        delay: server.delay(),
        runs_per_sec: runs as f64 / total.as_secs_f64(),
        wall_ms: Samples::new(wall),
        server_ms: Samples::new(server_time),
        overhead_ms: Samples::new(overhead),
        steps,
    }
}

/// One worker invocation on 10 records versus the records one at a time.
#[derive(Debug, Clone)]
pub struct Batch {
    /// Wall time of a 10-record batch, ms (one sample per repetition).
    pub batch_ms: Samples,
    /// Wall time of each record processed alone, ms.
    pub single_ms: Samples,
}

fn event(prefix: &str, n: usize) -> SqsEvent {
    let records: Vec<_> = (0..n)
        .map(|i| {
            let message = WorkMessage {
                run_id: format!("{prefix}-{i}"),
                request: Some(RunRequest::new(QUESTION)),
            };
            json!({
                "messageId": message.run_id,
                "body": serde_json::to_string(&message).expect("work message"),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
            })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).expect("SQS event")
}

/// `sqs::handle_batch` (what the worker binary calls) on 10 new-run records, `reps` times,
/// and the same records one per invocation; in-memory store, no continuation queue.
pub async fn batch(server: &LlmServer, reps: usize) -> Batch {
    let app = App::from_parts(
        Settings::default(),
        graph(server, "bench"),
        Arc::new(MemoryStore::new()),
        Arc::new(SystemClock),
    );
    let invoke = |event: SqsEvent| {
        let app = &app;
        async move {
            let started = Instant::now();
            let response = sqs::handle_batch(app, None, event, None).await;
            assert!(response.batch_item_failures.is_empty(), "{response:?}");
            ms(started.elapsed())
        }
    };
    // Warm the connection pool as a warm Lambda would have it.
    invoke(event("warm", 10)).await;
    let mut single = Vec::new();
    for i in 0..10 {
        single.push(invoke(event(&format!("single-{i}"), 1)).await);
    }
    let mut batches = Vec::new();
    for r in 0..reps {
        batches.push(invoke(event(&format!("batch-{r}"), 10)).await);
    }
    Batch {
        batch_ms: Samples::new(batches),
        single_ms: Samples::new(single),
    }
}
