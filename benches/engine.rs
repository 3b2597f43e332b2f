//! Engine overhead per step: a graph of no-op nodes driven through [`advance`].
//!
//! Two variants, both 50 steps per run (the default `WORKFLOW_RECURSION_LIMIT`):
//! - `noop_persist`: the run loop alone (limit checks, budget, step record with its RFC 3339
//!   timestamp, transition) with a `Persist` that does nothing;
//! - `memory_session`: the same through a real [`Session`] on a [`MemoryStore`], so every step
//!   also serializes the checkpoint (whose step records grow with the run) and writes it
//!   conditionally.
//!
//! A third group, `tracing`, shows what tracing costs when its export is off, on the
//! subscribers the binaries install (`bounded_rag::entry::logging`):
//! - `step_span/*`: open, enter, record and close one production step span
//!   (`bounded_rag::spans::step`), under no subscriber (the floor: a call site nobody listens
//!   to), the CLI's, the Lambda functions' default (JSON logs at INFO, no OTLP endpoint), and
//!   the Lambda functions' with export on (spans recorded for the exporter, drained unsent);
//! - `run_50_steps/*`: `noop_persist` under no subscriber, the Lambda default with logs at
//!   WARN (no log line is written), and with export on. The Lambda default at INFO adds one
//!   `step done` log line per step, which is logging, not tracing.
//!
//! `scripts/bench.sh` divides criterion's mean time per run by 50 to report time per step.
//! Run alone: `cargo bench --bench engine`.

use async_trait::async_trait;
use bounded_rag::clock::{Clock, SystemClock};
use bounded_rag::engine::{
    advance, BranchOutput, Budget, Checkpoint, EngineError, Graph, NodeId, Persist, Session,
    StepCtx, StepOutput, Transition,
};
use bounded_rag::error::{Classify, ErrorClass};
use bounded_rag::retry::RetryPolicy;
use bounded_rag::store::{Lease, MemoryStore};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde::{Deserialize, Serialize};
use std::hint::black_box;
use std::time::Duration;

/// Steps per benchmarked run.
const STEPS: u32 = 50;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Node {
    First,
    Next,
}

impl NodeId for Node {
    fn name(self) -> &'static str {
        match self {
            Node::First => "first",
            Node::Next => "next",
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

impl Classify for Never {
    fn class(&self) -> ErrorClass {
        ErrorClass::Permanent
    }
}

/// Every node only counts and moves on; the run ends after [`STEPS`] steps.
struct Noop;

#[async_trait]
impl Graph for Noop {
    type State = u32;
    type Node = Node;
    type Error = Never;
    type Merge = ();

    fn start(&self, _: &u32) -> Node {
        Node::First
    }
    fn retry_policy(&self, _: Node) -> RetryPolicy {
        RetryPolicy::NONE
    }
    fn estimate(&self, _: Node) -> Duration {
        Duration::ZERO
    }
    async fn step(
        &self,
        _node: Node,
        state: &mut u32,
        _ctx: &StepCtx<'_>,
    ) -> Result<StepOutput<Node>, Never> {
        *state += 1;
        Ok(if *state >= STEPS {
            StepOutput::end(serde_json::Value::Null)
        } else {
            StepOutput::next(Node::Next, serde_json::Value::Null)
        })
    }
    async fn branch(&self, _: Node, _: &u32, _: &StepCtx<'_>) -> Result<BranchOutput<()>, Never> {
        Err(Never)
    }
    fn merge(&self, _: &mut u32, _: ()) {}
    fn join(&self, _: Node, _: &mut u32) -> Transition<Node> {
        Transition::End
    }
}

/// Keeps nothing.
struct NoPersist;

#[async_trait]
impl<C: Send + Sync> Persist<C> for NoPersist {
    async fn save(&mut self, _: &C, _: bool) -> Result<(), EngineError> {
        Ok(())
    }
}

fn budget() -> Budget {
    Budget::new(STEPS, SystemClock.now_ms() + 3_600_000)
}

fn engine(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("engine");
    group.throughput(Throughput::Elements(u64::from(STEPS)));

    group.bench_function("noop_persist_50_steps", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(noop_run().await) })
    });

    group.bench_function("memory_session_50_steps", |b| {
        b.to_async(&rt).iter(|| {
            async move {
                // A fresh store per run: items would otherwise pile up over the iterations.
                let store = MemoryStore::new();
                let run_id = "bench";
                let budget = budget();
                let mut cp = Checkpoint::new(run_id, Node::First, 0u32);
                let lease = Lease {
                    owner: "bench".into(),
                    expires_at_ms: budget.deadline_ms,
                };
                let mut session = Session::create(&store, run_id, &cp, lease)
                    .await
                    .expect("create");
                advance(&Noop, &mut cp, &budget, &SystemClock, &mut session)
                    .await
                    .expect("advance");
                assert_eq!(cp.steps, STEPS);
                black_box(cp)
            }
        })
    });
    group.finish();
}

/// One `noop_persist` run (50 steps, so 50 `step` spans).
async fn noop_run() -> Checkpoint<u32, Node> {
    let budget = budget();
    let mut cp = Checkpoint::new("bench", Node::First, 0u32);
    advance(&Noop, &mut cp, &budget, &SystemClock, &mut NoPersist)
        .await
        .expect("advance");
    assert_eq!(cp.steps, STEPS);
    cp
}

/// One step span as the run loop makes it: opened, entered, its tokens and outcome recorded.
fn one_step_span() {
    let span = bounded_rag::spans::step("generate", "bench-run", 1);
    let _entered = span.enter();
    span.record("tokens", 123u64);
    span.record("outcome", "ok");
}

fn tracing_cost(c: &mut Criterion) {
    use bounded_rag::entry::logging::{cli_subscriber, lambda_subscriber};
    use bounded_rag::otlp::Exporter;
    use tracing::subscriber::with_default;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // As the template configures the functions (LoggingConfig LogFormat JSON).
    std::env::set_var("AWS_LAMBDA_LOG_FORMAT", "JSON");
    std::env::remove_var("RUST_LOG");
    // Export off, the functions still record the model calls' spans for their GenAI metrics
    // (none in these runs): the recorder is installed either way.
    let lambda_at = |level: &str, export: Option<bounded_rag::otlp::OtlpLayer>| {
        std::env::set_var("AWS_LAMBDA_LOG_LEVEL", level);
        let exports = export.is_some();
        let recorder = export.unwrap_or_else(|| Exporter::with_settings(None).1);
        lambda_subscriber(Some(recorder), exports)
    };
    let mut group = c.benchmark_group("tracing");

    group.bench_function("step_span/no_subscriber", |b| b.iter(one_step_span));
    with_default(cli_subscriber(false, None), || {
        group.bench_function("step_span/cli", |b| b.iter(one_step_span));
    });
    with_default(lambda_at("INFO", None), || {
        group.bench_function("step_span/lambda_export_off", |b| b.iter(one_step_span));
    });
    let (exporter, layer) = Exporter::new("http://127.0.0.1:9", "bench");
    with_default(lambda_at("INFO", Some(layer)), || {
        group.bench_function("step_span/lambda_export_on", |b| {
            b.iter(|| {
                one_step_span();
                assert_eq!(exporter.take_closed(), ["generate"]);
            })
        });
    });

    // The current-thread runtime polls on this thread, so a thread-local default applies.
    group.throughput(Throughput::Elements(u64::from(STEPS)));
    group.bench_function("run_50_steps/no_subscriber", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(noop_run().await) })
    });
    with_default(lambda_at("WARN", None), || {
        group.bench_function("run_50_steps/lambda_export_off", |b| {
            b.to_async(&rt)
                .iter(|| async { black_box(noop_run().await) })
        });
    });
    let (exporter, layer) = Exporter::new("http://127.0.0.1:9", "bench");
    with_default(lambda_at("WARN", Some(layer)), || {
        group.bench_function("run_50_steps/lambda_export_on", |b| {
            b.to_async(&rt).iter(|| async {
                let cp = noop_run().await;
                assert_eq!(exporter.take_closed().len(), STEPS as usize);
                black_box(cp)
            })
        });
    });
    group.finish();
}

criterion_group!(benches, engine, tracing_cost);
criterion_main!(benches);
