//! Web search in the workflow, through the Tavily-compatible client against a scripted server:
//! the fallback after exhausted rewrites, the web route, and a failing search.

use crate::support;
use crate::support::happy_path::{REWRITES, STEPS, VAGUE};

use bounded_rag::clock::{Clock, SystemClock};
use bounded_rag::engine::Budget;
use bounded_rag::llm::{OpenAiConfig, OpenAiModel};
use bounded_rag::rag::{RagGraph, RagLimits, RunRequest, RunResponse, RunStatus};
use bounded_rag::retry::RetryPolicy;
use bounded_rag::runs::Workflow;
use bounded_rag::search::{TavilyClient, TavilyConfig};
use bounded_rag::store::MemoryStore;
use std::sync::Arc;
use std::time::Duration;
use support::llm_server::{Reply, Script, ScriptedLlm};
use support::web_server::{ScriptedWeb, WebReply, WebResult};

async fn run(llm: &ScriptedLlm, web: &ScriptedWeb, request: RunRequest) -> RunResponse {
    let search = TavilyClient::new(TavilyConfig {
        base_url: web.base_url(),
        api_key: None,
    })
    .unwrap();
    run_with(llm, Some(Arc::new(search)), request).await
}

async fn run_with(
    llm: &ScriptedLlm,
    web: Option<Arc<TavilyClient>>,
    request: RunRequest,
) -> RunResponse {
    let model = OpenAiModel::new(OpenAiConfig::new(llm.base_url(), "m")).unwrap();
    let web = web.map(|w| w as Arc<dyn bounded_rag::search::WebSearch>);
    let graph = RagGraph::new(
        Arc::new(model),
        Arc::new(bounded_rag::ingest::sample_kb().unwrap()),
        web,
        RagLimits::default(),
    )
    .with_remote_policy(RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
    });
    let store = MemoryStore::new();
    let wf = Workflow::new(&graph, &store, &SystemClock);
    let budget = Budget::new(50, SystemClock.now_ms() + 60_000);
    wf.run_new("web", request, &budget).await.unwrap()
}

fn web_results() -> WebReply {
    WebReply::results([
        WebResult::new(
            "Durian canker",
            "https://example.org/canker",
            "Patch canker is caused by Phytophthora palmivora.",
            0.9,
        ),
        WebResult::new(
            "Durian care",
            "https://example.org/care",
            "Drain the orchard well.",
            0.5,
        ),
    ])
}

#[tokio::test]
async fn never_relevant_documents_give_exactly_three_rewrites_then_one_web_search() {
    // A question and rewrite every passage matches about as well: no clear match, which a
    // grade of `no` could not drop (the clear-match rule).
    // Each rewrite finds other passages: the loop runs to its limit.
    let llm = ScriptedLlm::start(
        Script::defaults()
            .on("grade_documents", [Reply::no()])
            .on("refine_query", REWRITES.map(Reply::refined)),
    )
    .await;
    let web = ScriptedWeb::start([web_results()]).await;
    let r = run(&llm, &web, RunRequest::new(VAGUE)).await;
    assert_eq!(llm.calls("refine_query"), 3);
    assert_eq!(web.calls(), 1, "exactly one web search");
    assert_eq!(web.queries(), [REWRITES[2]], "the last rewrite is searched");
    assert!(r.metadata.web_fallback);
    assert_eq!(r.status, RunStatus::Completed);
    let urls: Vec<&str> = r.citations.iter().map(|c| c.url.as_str()).collect();
    // The answer stands on the result it cites.
    assert_eq!(urls, ["https://example.org/canker"]);
    // the web results are graded for grounding, not re-graded for relevance
    assert_eq!(llm.calls("grade_documents"), 12);
    assert_eq!(llm.calls("grade_hallucinations"), 1);
}

#[tokio::test]
async fn web_route_searches_once_with_the_requested_number_of_results() {
    let llm =
        ScriptedLlm::start(Script::defaults().on("route_query", [Reply::route("web_search")]))
            .await;
    let web = ScriptedWeb::start([web_results()]).await;
    let mut request = RunRequest::new("What is the durian price today?");
    request.n_web_searches = 5;
    let r = run(&llm, &web, request).await;
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(web.calls(), 1);
    assert_eq!(web.last().unwrap().max_results(), Some(5));
    let names: Vec<&str> = r.workflow_steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "route_question",
            "web_search",
            "generate",
            "grade_hallucinations",
            "grade_answer"
        ]
    );
}

#[tokio::test]
async fn a_web_route_without_web_search_configured_answers_from_the_knowledge_base() {
    // The routing prompt does not offer web search here, but a model may name it anyway.
    let llm =
        ScriptedLlm::start(Script::defaults().on("route_query", [Reply::route("web_search")]))
            .await;
    let r = run_with(
        &llm,
        None,
        RunRequest::new("What causes patch canker in durian?"),
    )
    .await;
    assert_eq!(r.status, RunStatus::Completed);
    let names: Vec<&str> = r.workflow_steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, STEPS);
    let route = &r.workflow_steps[0].details;
    assert_eq!(route["data_source"], "kg_retrieval");
    assert_eq!(route["chosen"], "web_search");
    assert_eq!(route["unavailable"], true);
    assert!(!r.metadata.web_search_unavailable);
    assert!(!r.citations.is_empty());
    assert!(r.citations.iter().all(|c| c.url.starts_with("kb://")));
    assert_eq!(llm.calls("route_query"), 1);
    assert_eq!(llm.calls("refine_query"), 0);
    assert_eq!(llm.calls("generate_answer"), 1);
}

#[tokio::test]
async fn a_search_that_keeps_failing_is_retried_then_fails_the_run_clearly() {
    let llm =
        ScriptedLlm::start(Script::defaults().on("route_query", [Reply::route("web_search")]))
            .await;
    let web = ScriptedWeb::start([WebReply::status(503)]).await;
    let r = run(&llm, &web, RunRequest::new("latest durian news")).await;
    assert_eq!(web.calls(), 4, "first attempt + 3 retries");
    assert_eq!(r.status, RunStatus::Failed);
    assert_eq!(r.metadata.infrastructure_retries, 3);
    let error = r.error.unwrap();
    assert_eq!(error.node, "web_search");
    assert_eq!(error.class, bounded_rag::error::ErrorClass::Transient);

    let web = ScriptedWeb::start([WebReply::status(401)]).await;
    let r = run(&llm, &web, RunRequest::new("latest durian news")).await;
    assert_eq!(web.calls(), 1, "a permanent error is never retried");
    assert_eq!(r.status, RunStatus::Failed);
}
