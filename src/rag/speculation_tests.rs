//! Speculation through the whole workflow: exact model calls, steps and events when the
//! speculative answer is used, discarded (grading dropped a passage; the route was the model
//! alone; the web route is in `speculation_web_tests.rs`), and when speculation is off.

use crate::clock::{Clock, SystemClock};
use crate::config::Speculation;
use crate::engine::Budget;
use crate::llm::{ChatModel, ChatRequest, Completion, LlmError, ScriptedModel, Task};
use crate::rag::{Events, RagGraph, RagLimits, RunEvent, RunRequest, RunResponse};
use crate::runs::Workflow;
use crate::search::WebSearch;
use crate::store::MemoryStore;
use async_trait::async_trait;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Barrier, Semaphore};

const QUESTION: &str = "What causes patch canker in durian?";
/// A question every passage matches about as well: no clear match.
pub(super) const VAGUE: &str = "Tell me about durian trees.";
pub(super) const ANSWER: &str = "Patch canker is caused by Phytophthora palmivora [1].";

/// Wraps the scripted model: the first `together` calls each wait until all of them are in
/// flight (a barrier, so only concurrent calls get past it), and document grades are
/// answered only once the answer has been generated and streamed.
struct Gated {
    inner: ScriptedModel,
    started: AtomicUsize,
    together: usize,
    barrier: Barrier,
    answered: Semaphore,
}

impl Gated {
    fn new(inner: ScriptedModel, together: usize) -> Self {
        Self {
            inner,
            started: AtomicUsize::new(0),
            together,
            barrier: Barrier::new(together.max(1)),
            answered: Semaphore::new(0),
        }
    }

    async fn gate(&self, task: Task) {
        if self.started.fetch_add(1, Ordering::SeqCst) < self.together {
            self.barrier.wait().await;
        }
        if task == Task::GradeDocuments && self.together > 0 {
            if let Ok(permit) = self.answered.acquire().await {
                permit.forget();
            }
        }
    }
}

#[async_trait]
impl ChatModel for Gated {
    async fn complete(&self, request: &ChatRequest<'_>) -> Result<Completion, LlmError> {
        self.gate(request.task).await;
        let out = self.inner.complete(request).await;
        if request.task == Task::GenerateAnswer {
            self.answered.add_permits(1_000);
        }
        out
    }

    async fn complete_streaming(
        &self,
        request: &ChatRequest<'_>,
        on_delta: crate::llm::DeltaSink<'_>,
    ) -> Result<Completion, LlmError> {
        self.gate(request.task).await;
        let out = self.inner.complete(request).await?;
        on_delta(&out.content);
        self.answered.add_permits(1_000);
        Ok(out)
    }

    fn name(&self) -> &'static str {
        "scripted"
    }
}

pub(super) fn script(route: &str, grades: &[&str]) -> ScriptedModel {
    let mut model = ScriptedModel::new()
        .reply(Task::RouteQuery, json!({ "data_source": route }))
        .raw(Task::GenerateAnswer, ANSWER)
        .reply(Task::GradeHallucinations, json!({ "binary_score": "yes" }))
        .reply(Task::GradeAnswer, json!({ "binary_score": "yes" }));
    for grade in grades {
        model = model.reply(Task::GradeDocuments, json!({ "binary_score": grade }));
    }
    model
}

/// The steps of a run whose speculative answer is the answer.
pub(super) const USED: [&str; 6] = [
    "kg_retrieval",
    "route_question",
    "grade_documents",
    "generate",
    "grade_hallucinations",
    "grade_answer",
];

pub(super) struct Run {
    pub(super) response: RunResponse,
    events: Vec<RunEvent>,
    model: Arc<Gated>,
}

impl Run {
    pub(super) fn calls(&self, task: Task) -> usize {
        self.model.inner.calls(task)
    }

    /// `metadata.speculation`'s (started, used, discarded).
    pub(super) fn counters(&self) -> (u32, u32, u32) {
        let s = &self.response.metadata.speculation;
        (s.started, s.used, s.discarded)
    }

    pub(super) fn steps(&self) -> Vec<&str> {
        let steps = &self.response.workflow_steps;
        steps.iter().map(|s| s.name.as_str()).collect()
    }

    /// Event names with their attempt (`token:1`, `discarded:1`) or step name.
    fn events(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for e in &self.events {
            let label = match e {
                RunEvent::Step { name, .. } => format!("step:{name}"),
                RunEvent::Token { attempt, .. } => format!("token:{attempt}"),
                RunEvent::Discarded { attempt } => format!("discarded:{attempt}"),
            };
            // one label per run of tokens
            if out.last() != Some(&label) {
                out.push(label);
            }
        }
        out
    }

    pub(super) fn position(&self, label: &str) -> usize {
        let events = self.events();
        let at = events.iter().position(|e| e == label);
        at.unwrap_or_else(|| panic!("no {label} in {events:?}"))
    }
}

/// Runs `request` with speculation `on`; `together` calls must be in flight at once first.
pub(super) async fn run(
    model: ScriptedModel,
    together: usize,
    on: Speculation,
    request: RunRequest,
) -> Run {
    run_with_web(model, together, on, request, None).await
}

/// [`run`] with a web search configured (or not).
pub(super) async fn run_with_web(
    model: ScriptedModel,
    together: usize,
    on: Speculation,
    request: RunRequest,
    web: Option<Arc<dyn WebSearch>>,
) -> Run {
    let model = Arc::new(Gated::new(model, together));
    let kb = Arc::new(crate::ingest::sample_kb().unwrap());
    // One quick retry: the tests that fail a call count its two attempts exactly.
    let quick = crate::retry::RetryPolicy {
        max_retries: 1,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(1),
    };
    let graph = RagGraph::new(model.clone(), kb, web, RagLimits::default())
        .with_speculation(on)
        .with_remote_policy(quick);
    let (events, mut receiver) = Events::channel();
    let graph = graph.with_events(events);
    let store = MemoryStore::new();
    let budget = Budget::new(50, SystemClock.now_ms() + 60_000);
    let workflow = Workflow::new(&graph, &store, &SystemClock);
    let running = workflow.run_new("spec-run", request, &budget);
    // The guard only turns a deadlock (calls not concurrent) into a failure.
    let response = tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .expect("the speculative calls were not in flight together")
        .unwrap();
    let mut events = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        events.push(event);
    }
    Run {
        response,
        events,
        model,
    }
}

pub(super) fn request() -> RunRequest {
    RunRequest::new(QUESTION)
}

#[tokio::test]
async fn used_two_round_trips_seven_calls_and_the_first_token_before_grading_finishes() {
    // route + three grades + the answer: five calls in flight together
    let r = run(
        script("kg_retrieval", &["yes"]),
        5,
        Speculation::On,
        request(),
    )
    .await;
    let m = &r.response.metadata;
    assert_eq!(r.response.answer, ANSWER);
    assert_eq!(r.steps(), USED);
    assert_eq!(
        [Task::RouteQuery, Task::GradeDocuments, Task::GenerateAnswer].map(|t| r.calls(t)),
        [1, 3, 1]
    );
    assert_eq!(
        r.calls(Task::GradeHallucinations) + r.calls(Task::GradeAnswer),
        2
    );
    assert_eq!((m.model_calls, m.total_steps), (7, 6));
    assert_eq!(r.counters(), (1, 1, 0));
    assert_eq!(m.speculation.wasted_tokens, 0);
    // the answer streamed before grading finished, and nothing was discarded
    assert!(r.position("token:1") < r.position("step:grade_documents"));
    assert!(!r.events().iter().any(|e| e.starts_with("discarded")));
    assert_eq!(r.response.workflow_steps[3].details["speculative"], true);
}

#[tokio::test]
async fn discarded_when_grading_drops_a_passage_it_stands_on_then_answered_from_the_kept_ones() {
    // The answer cites the first passage, the one grading drops.
    let r = run(
        script("kg_retrieval", &["no", "yes", "yes"]),
        5,
        Speculation::On,
        request(),
    )
    .await;
    let m = &r.response.metadata;
    assert_eq!(
        r.steps(),
        [
            "kg_retrieval",
            "route_question",
            "grade_documents",
            "generate",
            "generate",
            "grade_hallucinations",
            "grade_answer"
        ]
    );
    assert_eq!(r.calls(Task::GenerateAnswer), 2);
    assert_eq!(r.calls(Task::GradeDocuments), 3);
    assert_eq!(m.model_calls, 8);
    assert_eq!(r.response.workflow_steps[4].details["documents"], 2);
    // Answered from the two kept passages; it stands on the one it cites.
    assert_eq!(r.response.citations.len(), 1);
    assert!(!r.response.citations[0].attributed);
    assert_eq!(r.counters(), (1, 0, 1));
    let speculative = r.response.workflow_steps[3].usage.total();
    assert!(speculative > 0);
    assert_eq!(m.speculation.wasted_tokens, speculative);
    // attempt 1 streamed, was discarded, then attempt 2 streamed and stood
    let (t1, d1, t2) = (
        r.position("token:1"),
        r.position("discarded:1"),
        r.position("token:2"),
    );
    assert!(t1 < d1 && d1 < t2, "{:?}", r.events());
    assert_eq!(
        r.events()
            .iter()
            .filter(|e| e.starts_with("discarded"))
            .count(),
        1
    );
}

#[tokio::test]
async fn kept_when_grading_drops_only_passages_it_does_not_stand_on() {
    // The answer cites the first passage, and says nothing only the second holds: grading
    // dropping the second leaves the answer as it would have been written from the kept ones.
    let r = run(
        script("kg_retrieval", &["yes", "no", "yes"]),
        5,
        Speculation::On,
        request(),
    )
    .await;
    let m = &r.response.metadata;
    assert_eq!(r.steps(), USED);
    assert_eq!(r.calls(Task::GenerateAnswer), 1);
    assert_eq!(r.calls(Task::GradeDocuments), 3);
    assert_eq!(m.model_calls, 7);
    assert_eq!(r.counters(), (1, 1, 0));
    assert_eq!(m.speculation.wasted_tokens, 0);
    // Cited as the model wrote it, numbered among the two kept passages.
    assert_eq!(r.response.answer, ANSWER);
    assert_eq!(r.response.citations.len(), 1);
    assert!(!r.response.citations[0].attributed);
    assert!(!r.events().iter().any(|e| e.starts_with("discarded")));
}

#[tokio::test]
async fn discarded_when_the_route_is_the_model_alone() {
    // A question no passage clearly matches: the router's choice of the model alone stands.
    let mut vague = request();
    vague.question = VAGUE.into();
    let model = ScriptedModel::new()
        .reply(Task::RouteQuery, json!({ "data_source": "llm_internal" }))
        .raw(
            Task::GenerateAnswer,
            "Patch canker and Phytophthora root rot affect durian [2][3].",
        )
        .reply(Task::GradeDocuments, json!({ "binary_score": "yes" }))
        .reply(Task::GradeAnswer, json!({ "binary_score": "yes" }));
    let r = run(model, 5, Speculation::On, vague).await;
    let m = &r.response.metadata;
    assert!(!m.route_overruled);
    assert_eq!(
        r.steps(),
        [
            "kg_retrieval",
            "route_question",
            "grade_documents",
            "generate",
            "generate",
            "grade_answer"
        ]
    );
    assert_eq!(r.calls(Task::GenerateAnswer), 2);
    assert_eq!(r.calls(Task::GradeHallucinations), 0, "no context to check");
    assert_eq!(m.model_calls, 7);
    assert_eq!(r.response.workflow_steps[4].details["documents"], 0);
    assert_eq!(r.counters(), (1, 0, 1));
    assert!(r.position("discarded:1") < r.position("token:2"));
}

#[tokio::test]
async fn off_by_request_or_setting_keeps_the_sequential_path_and_its_counts() {
    let mut off = request();
    off.speculation = Some(Speculation::Off);
    for (on, request) in [(Speculation::On, off), (Speculation::Off, request())] {
        let r = run(script("kg_retrieval", &["yes"]), 0, on, request).await;
        let m = &r.response.metadata;
        assert_eq!(
            r.steps(),
            [
                "route_question",
                "kg_retrieval",
                "grade_documents",
                "generate",
                "grade_hallucinations",
                "grade_answer"
            ]
        );
        assert_eq!(m.model_calls, 7);
        assert_eq!(m.speculation, crate::rag::SpeculationStats::default());
        // the answer streams only after grading
        assert!(r.position("step:grade_documents") < r.position("token:1"));
    }
}

#[tokio::test]
async fn speculation_in_a_speed_request_skips_grading_and_uses_the_answer() {
    let mut speed = request();
    speed.mode = crate::rag::Mode::Speed;
    // route and answer in flight together
    let r = run(script("kg_retrieval", &["yes"]), 2, Speculation::On, speed).await;
    assert_eq!(r.steps(), ["kg_retrieval", "route_question", "generate"]);
    assert_eq!(r.response.metadata.model_calls, 2);
    assert_eq!(r.response.metadata.speculation.used, 1);
}

/// The same scripted run with speculation on and off: (on, off).
async fn both(model: impl Fn() -> ScriptedModel) -> (Run, Run) {
    let on = run(model(), 0, Speculation::On, request()).await;
    let off = run(model(), 0, Speculation::Off, request()).await;
    (on, off)
}

/// Rewrites of [`VAGUE`] that each retrieve other passages of the sample knowledge base.
const REWRITES: [&str; 3] = [
    "durian fruit borer larvae",
    "psyllid nymphs on durian leaves",
    "mealybugs wax on durian fruit",
];

#[tokio::test]
async fn rewrites_and_the_web_fallback_cost_one_discarded_answer() {
    // A question every passage matches about as well (no clear match: a clear match graded
    // irrelevant would be kept), graded irrelevant every time.
    let vague = || RunRequest::new(VAGUE);
    let model = || {
        ScriptedModel::new()
            .reply(Task::RouteQuery, json!({ "data_source": "kg_retrieval" }))
            .reply(Task::GradeDocuments, json!({ "binary_score": "no" }))
            // Each rewrite finds other passages: the loop runs to its limit.
            .reply(
                Task::RefineQuery,
                json!({ "refined_question": REWRITES[0] }),
            )
            .reply(
                Task::RefineQuery,
                json!({ "refined_question": REWRITES[1] }),
            )
            .reply(
                Task::RefineQuery,
                json!({ "refined_question": REWRITES[2] }),
            )
            .raw(Task::GenerateAnswer, "Scripted answer [1].")
            .reply(Task::GradeHallucinations, json!({ "binary_score": "yes" }))
            .reply(Task::GradeAnswer, json!({ "binary_score": "yes" }))
    };
    let on = run(model(), 0, Speculation::On, vague()).await;
    let off = run(model(), 0, Speculation::Off, vague()).await;

    let (m, o) = (&on.response.metadata, &off.response.metadata);
    assert_eq!(m.query_transformation_retry_count, 3);
    assert!(m.web_fallback && o.web_fallback);
    assert_eq!(m.model_calls, o.model_calls + 1, "one speculative answer");
    assert_eq!(
        o.model_calls, 17,
        "route, 4 x 3 grades, 3 rewrites, 1 answer"
    );
    assert_eq!(
        on.calls(Task::GradeDocuments),
        off.calls(Task::GradeDocuments)
    );
    assert_eq!(on.counters(), (1, 0, 1));
    assert_eq!(m.total_steps, o.total_steps + 1);
}

#[tokio::test]
async fn regenerations_cost_nothing_extra_when_the_speculative_answer_is_used() {
    let (on, off) = both(|| {
        ScriptedModel::new()
            .reply(Task::RouteQuery, json!({ "data_source": "kg_retrieval" }))
            .reply(Task::GradeDocuments, json!({ "binary_score": "yes" }))
            .raw(Task::GenerateAnswer, ANSWER)
            .reply(Task::GradeHallucinations, json!({ "binary_score": "no" }))
            .reply(Task::GradeHallucinations, json!({ "binary_score": "yes" }))
            .reply(Task::GradeAnswer, json!({ "binary_score": "yes" }))
    })
    .await;
    let (m, o) = (&on.response.metadata, &off.response.metadata);
    // the first answer (speculative when on) is not grounded: one regeneration either way
    assert_eq!(
        (m.hallucination_retry_count, o.hallucination_retry_count),
        (1, 1)
    );
    assert_eq!((m.model_calls, o.model_calls), (10, 10));
    assert_eq!(on.calls(Task::GenerateAnswer), 2);
    assert_eq!(on.counters(), (1, 1, 0));
    assert!(on.position("discarded:1") < on.position("token:2"));
}
