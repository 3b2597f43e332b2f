//! Speculation when the router chooses web search: the speculative answer is discarded when a
//! web search is configured, and used when none is (the question goes to the knowledge base).

use super::tests::{request, run, run_with_web, script, ANSWER, USED};
use crate::config::Speculation;
use crate::knowledge::{DocKind, Document};
use crate::llm::Task;
use crate::search::{WebSearch, WebSearchError};
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

/// A web search that finds one page.
pub(super) struct OnePage;

#[async_trait]
impl WebSearch for OnePage {
    async fn search(
        &self,
        _query: &str,
        _max_results: usize,
        _timeout: Duration,
    ) -> Result<Vec<Document>, WebSearchError> {
        Ok(vec![Document {
            id: "https://example.org/canker".into(),
            title: "Durian canker".into(),
            url: "https://example.org/canker".into(),
            content: "Patch canker is caused by Phytophthora palmivora.".into(),
            score: 0.9,
            kind: DocKind::Web,
            clear_match: false,
            from_graph: false,
            vector_rank: None,
        }])
    }
}

#[tokio::test]
async fn discarded_when_the_route_is_web_search_with_its_grading_wasted() {
    let r = run_with_web(
        script("web_search", &["yes"]),
        5,
        Speculation::On,
        request(),
        Some(Arc::new(OnePage)),
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
            "web_search",
            "generate",
            "grade_hallucinations",
            "grade_answer"
        ]
    );
    assert_eq!(
        [Task::RouteQuery, Task::GradeDocuments, Task::GenerateAnswer].map(|t| r.calls(t)),
        [1, 3, 2]
    );
    assert_eq!(m.model_calls, 8);
    assert_eq!(r.counters(), (1, 0, 1));
    let wasted: u64 = r.response.workflow_steps[2..4]
        .iter()
        .map(|s| s.usage.total())
        .sum();
    assert_eq!(m.speculation.wasted_tokens, wasted, "grading and answer");
    let urls: Vec<&str> = r
        .response
        .citations
        .iter()
        .map(|c| c.url.as_str())
        .collect();
    assert_eq!(urls, ["https://example.org/canker"], "the passages dropped");
    assert!(r.position("discarded:1") < r.position("token:2"));
}

#[tokio::test]
async fn used_when_the_route_is_web_search_but_none_is_configured() {
    // The router named a source there is not: the knowledge base is searched, so the
    // speculative answer from it stands.
    let r = run(
        script("web_search", &["yes"]),
        5,
        Speculation::On,
        request(),
    )
    .await;
    let m = &r.response.metadata;
    assert_eq!(r.response.answer, ANSWER);
    assert_eq!(r.steps(), USED);
    assert_eq!(r.response.workflow_steps[1].details["chosen"], "web_search");
    assert_eq!(m.model_calls, 7);
    assert_eq!(r.counters(), (1, 1, 0));
    assert!(!m.web_search_unavailable);
}
