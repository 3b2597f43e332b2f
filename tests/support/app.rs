//! An in-process [`App`] over loopback servers and in-memory parts, for handler tests.

use super::llm_server::ScriptedLlm;
use async_trait::async_trait;
use bounded_rag::clock::{Clock, FakeClock, SystemClock};
use bounded_rag::config::Settings;
use bounded_rag::entry::App;
use bounded_rag::llm::{ChatModel, ChatRequest, Completion, LlmError, OpenAiConfig, OpenAiModel};
use bounded_rag::rag::{RagGraph, RagLimits};
use bounded_rag::retry::RetryPolicy;
use bounded_rag::store::{CheckpointStore, MemoryStore};
use std::sync::Arc;
use std::time::Duration;

/// The real client, but every call costs `per_call` on a fake clock.
pub struct Timed {
    /// Wrapped client.
    pub inner: OpenAiModel,
    /// Clock to advance.
    pub clock: Arc<FakeClock>,
    /// Cost of one call.
    pub per_call: Duration,
}

#[async_trait]
impl ChatModel for Timed {
    async fn complete(&self, request: &ChatRequest<'_>) -> Result<Completion, LlmError> {
        self.clock.advance(self.per_call);
        self.inner.complete(request).await
    }
    fn name(&self) -> &'static str {
        "timed"
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}

fn client(llm: &ScriptedLlm) -> OpenAiModel {
    OpenAiModel::new(OpenAiConfig::new(llm.base_url(), "test-model")).unwrap()
}

fn graph(model: Arc<dyn ChatModel>) -> RagGraph {
    let kb = bounded_rag::ingest::sample_kb().unwrap();
    RagGraph::new(model, Arc::new(kb), None, RagLimits::default()).with_remote_policy(RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
    })
}

/// The graph over the scripted model, every call costing `per_call` on `clock`.
pub fn timed_graph(llm: &ScriptedLlm, clock: Arc<FakeClock>, per_call: Duration) -> RagGraph {
    graph(Arc::new(Timed {
        inner: client(llm),
        clock,
        per_call,
    }))
}

/// An app on the scripted model, an in-memory store and the system clock.
pub fn app(llm: &ScriptedLlm, store: Arc<dyn CheckpointStore>, queue_configured: bool) -> App {
    let mut settings = Settings::default();
    if queue_configured {
        settings.aws.work_queue_url = Some("http://127.0.0.1:1/queue/work".into());
    }
    App::from_parts(
        settings,
        graph(Arc::new(client(llm))),
        store,
        Arc::new(SystemClock),
    )
}

/// An app whose model calls each cost `per_call` of fake time and whose runs get `budget` per
/// invocation (no Lambda deadline in these events, so `RUN_TIMEOUT_MS` is the budget).
pub fn timed_app(llm: &ScriptedLlm, per_call: Duration, budget: Duration) -> (App, Arc<FakeClock>) {
    timed_app_on(llm, per_call, budget, Arc::new(MemoryStore::new()))
}

/// [`timed_app`] over a given store.
pub fn timed_app_on(
    llm: &ScriptedLlm,
    per_call: Duration,
    budget: Duration,
    store: Arc<dyn CheckpointStore>,
) -> (App, Arc<FakeClock>) {
    timed_app_with(llm, per_call, budget, store, |g| g)
}

/// [`timed_app_on`] whose graph `configure` adjusts (interrupts, web search).
pub fn timed_app_with(
    llm: &ScriptedLlm,
    per_call: Duration,
    budget: Duration,
    store: Arc<dyn CheckpointStore>,
    configure: impl FnOnce(RagGraph) -> RagGraph,
) -> (App, Arc<FakeClock>) {
    let clock = Arc::new(FakeClock::at_ms(SystemClock.now_ms()));
    let model = Timed {
        inner: client(llm),
        clock: clock.clone(),
        per_call,
    };
    let mut settings = Settings::default();
    settings.aws.work_queue_url = Some("http://127.0.0.1:1/queue/work".into());
    settings.budgets.run_timeout = budget;
    settings.budgets.deadline_margin = Duration::ZERO;
    let graph = configure(graph(Arc::new(model)));
    let app = App::from_parts(settings, graph, store, clock.clone());
    (app, clock)
}

/// An app on the scripted model whose graph `configure` adjusts (web search, interrupts), over
/// `store` and `clock`.
pub fn app_with(
    llm: &ScriptedLlm,
    store: Arc<dyn CheckpointStore>,
    clock: Arc<dyn Clock>,
    configure: impl FnOnce(RagGraph) -> RagGraph,
) -> App {
    App::from_parts(
        Settings::default(),
        configure(graph(Arc::new(client(llm)))),
        store,
        clock,
    )
}
