//! The node bodies and the routers after them. Each node does its I/O first, then updates the
//! state, then names the next node; every loop is bounded by a counter checked here and by the
//! engine's step limit and deadline.

use super::{prompts, BestEffortReason, Outcome, RagError, RagGraph, RagNode, RagState};
use crate::engine::{StepCtx, StepOutput};
use crate::llm::{
    ask_metered, BinaryScore, ChatRequest, DataSource, Generated, Refined, RouteDecision, Task,
    TaskInputs,
};
use crate::retrieval::Document;
use serde::de::DeserializeOwned;
use serde_json::json;

type Step = Result<StepOutput<RagNode>, RagError>;

/// One structured model call with the node's retry policy.
async fn call<T: DeserializeOwned>(
    graph: &RagGraph,
    ctx: &StepCtx<'_>,
    task: Task,
    question: &str,
    documents: &[Document],
    answer: Option<&str>,
) -> Result<T, RagError> {
    let result = ctx
        .retry(task.schema_name(), || {
            let request = ChatRequest {
                task,
                messages: prompts::messages(task, question, documents, answer),
                inputs: TaskInputs {
                    question,
                    documents,
                    answer,
                },
                timeout: ctx.remaining(),
            };
            async move { ask_metered::<T>(graph.model.as_ref(), &request, ctx.meter(), None).await }
        })
        .await?;
    Ok(result)
}

pub(super) async fn route_question(
    graph: &RagGraph,
    state: &mut RagState,
    ctx: &StepCtx<'_>,
) -> Step {
    let decision: RouteDecision = call(
        graph,
        ctx,
        Task::RouteQuery,
        &state.request.question,
        &[],
        None,
    )
    .await?;
    state.route = Some(decision.data_source);
    let next = match decision.data_source {
        DataSource::KgRetrieval => RagNode::KgRetrieval,
        DataSource::WebSearch => RagNode::WebSearch,
        DataSource::LlmInternal => RagNode::Generate,
    };
    tracing::info!(route = decision.data_source.as_str(), "route chosen");
    Ok(StepOutput::next(
        next,
        json!({ "data_source": decision.data_source }),
    ))
}

pub(super) async fn kg_retrieval(
    graph: &RagGraph,
    state: &mut RagState,
    ctx: &StepCtx<'_>,
) -> Step {
    let options = state.request.retrieval_options();
    let query = state.query.as_str();
    let documents = ctx
        .retry("kg_retrieval", || graph.kb.retrieve(query, &options))
        .await?;
    let found = documents.len();
    state.documents = documents;
    if state.request.grade_documents() {
        return Ok(StepOutput::next(
            RagNode::GradeDocuments,
            json!({ "query": state.query, "documents": found }),
        ));
    }
    let (next, decision) = decide_to_generate(graph, state, found);
    Ok(StepOutput::next(
        next,
        json!({ "query": state.query, "documents": found, "decision": decision }),
    ))
}

pub(super) async fn grade_documents(
    graph: &RagGraph,
    state: &mut RagState,
    ctx: &StepCtx<'_>,
) -> Step {
    let question = state.request.question.as_str();
    let grades = futures::future::try_join_all(state.documents.iter().map(|doc| {
        call::<BinaryScore>(
            graph,
            ctx,
            Task::GradeDocuments,
            question,
            std::slice::from_ref(doc),
            None,
        )
    }))
    .await?;
    let graded = grades.len();
    let mut keep = grades.iter().map(|g| g.yes());
    state.documents.retain(|_| keep.next().unwrap_or(false));
    let relevant = state.documents.len();
    let (next, decision) = decide_to_generate(graph, state, relevant);
    Ok(StepOutput::next(
        next,
        json!({ "graded": graded, "relevant": relevant, "decision": decision }),
    ))
}

/// `decide_to_generate`: relevant documents -> generate; none -> rewrite while rewrites remain;
/// rewrites exhausted -> web-search fallback.
fn decide_to_generate(
    graph: &RagGraph,
    state: &mut RagState,
    relevant: usize,
) -> (RagNode, &'static str) {
    let max = graph.limits.max_retries;
    if relevant > 0 {
        (RagNode::Generate, "generate")
    } else if state.query_transformation_retry_count < max {
        (RagNode::TransformQuery, "transform_query")
    } else {
        tracing::warn!("max retries reached ({max}/{max}): falling back to web search");
        state.web_fallback = true;
        (RagNode::WebSearch, "web_search_fallback")
    }
}

pub(super) async fn transform_query(
    graph: &RagGraph,
    state: &mut RagState,
    ctx: &StepCtx<'_>,
) -> Step {
    let refined: Refined = call(graph, ctx, Task::RefineQuery, &state.query, &[], None).await?;
    state.query_transformation_retry_count += 1;
    let n = state.query_transformation_retry_count;
    let max = graph.limits.max_retries;
    tracing::info!("query rewrite: retry {n}/{max}");
    state.query = refined.refined_question;
    let next = match state.route {
        Some(DataSource::WebSearch) => RagNode::WebSearch,
        Some(DataSource::LlmInternal) => RagNode::Generate,
        Some(DataSource::KgRetrieval) | None => RagNode::KgRetrieval,
    };
    Ok(StepOutput::next(
        next,
        json!({ "refined_question": state.query, "retry": format!("{n}/{max}") }),
    ))
}

pub(super) async fn web_search(graph: &RagGraph, state: &mut RagState, ctx: &StepCtx<'_>) -> Step {
    let Some(web) = &graph.web else {
        tracing::warn!("web search wanted but not configured (WEB_SEARCH_BASE_URL unset)");
        state.web_search_unavailable = true;
        state.documents.clear();
        return Ok(StepOutput::next(
            RagNode::Generate,
            json!({ "configured": false, "fallback": state.web_fallback, "results": 0 }),
        ));
    };
    let query = state.query.as_str();
    let max_results = state.request.n_web_searches as usize;
    let results = ctx
        .retry("web_search", || {
            web.search(query, max_results, ctx.remaining())
        })
        .await?;
    let found = results.len();
    state.documents = results;
    Ok(StepOutput::next(
        RagNode::Generate,
        json!({ "configured": true, "fallback": state.web_fallback, "results": found }),
    ))
}

pub(super) async fn generate(graph: &RagGraph, state: &mut RagState, ctx: &StepCtx<'_>) -> Step {
    let generated: Generated = call(
        graph,
        ctx,
        Task::GenerateAnswer,
        &state.request.question,
        &state.documents,
        None,
    )
    .await?;
    state.generation = Some(generated.answer);
    let details = json!({ "documents": state.documents.len(), "regeneration": state.hallucination_retry_count });
    let no_context = state.documents.is_empty();
    if no_context && state.route != Some(DataSource::LlmInternal) {
        // Wanted sources, found none: answer from the model alone, clearly marked.
        return Ok(end(
            state,
            Outcome::BestEffort(BestEffortReason::NoSources),
            details,
        ));
    }
    if state.request.check_hallucinations() && !no_context {
        return Ok(StepOutput::next(RagNode::GradeHallucinations, details));
    }
    Ok(grade_answer_or_end(state, details))
}

/// After a grounded (or unchecked) answer: check its usefulness if asked, else finish.
fn grade_answer_or_end(state: &mut RagState, details: serde_json::Value) -> StepOutput<RagNode> {
    if state.request.check_answer() {
        return StepOutput::next(RagNode::GradeAnswer, details);
    }
    end(state, Outcome::Completed, details)
}

pub(super) async fn grade_hallucinations(
    graph: &RagGraph,
    state: &mut RagState,
    ctx: &StepCtx<'_>,
) -> Step {
    let answer = state.generation.as_deref();
    let grade: BinaryScore = call(
        graph,
        ctx,
        Task::GradeHallucinations,
        &state.request.question,
        &state.documents,
        answer,
    )
    .await?;
    let max = graph.limits.max_regenerations;
    if grade.yes() {
        return Ok(grade_answer_or_end(state, json!({ "grounded": true })));
    }
    if state.hallucination_retry_count < max {
        state.hallucination_retry_count += 1;
        let n = state.hallucination_retry_count;
        tracing::info!("answer not grounded: regeneration retry {n}/{max}");
        return Ok(StepOutput::next(
            RagNode::Generate,
            json!({ "grounded": false, "retry": format!("{n}/{max}") }),
        ));
    }
    tracing::warn!("max retries reached ({max}/{max} regenerations): ending best-effort");
    Ok(end(
        state,
        Outcome::BestEffort(BestEffortReason::MaxRegenerations),
        json!({ "grounded": false, "decision": "max_regenerations" }),
    ))
}

pub(super) async fn grade_answer(
    graph: &RagGraph,
    state: &mut RagState,
    ctx: &StepCtx<'_>,
) -> Step {
    let answer = state.generation.as_deref();
    let grade: BinaryScore = call(
        graph,
        ctx,
        Task::GradeAnswer,
        &state.request.question,
        &[],
        answer,
    )
    .await?;
    if grade.yes() {
        return Ok(end(state, Outcome::Completed, json!({ "useful": true })));
    }
    let max = graph.limits.max_retries;
    if state.query_transformation_retry_count < max {
        return Ok(StepOutput::next(
            RagNode::TransformQuery,
            json!({ "useful": false, "decision": "transform_query" }),
        ));
    }
    tracing::warn!("max retries reached ({max}/{max} rewrites): ending best-effort");
    Ok(end(
        state,
        Outcome::BestEffort(BestEffortReason::MaxRetries),
        json!({ "useful": false, "decision": "max_retries" }),
    ))
}

fn end(state: &mut RagState, outcome: Outcome, details: serde_json::Value) -> StepOutput<RagNode> {
    let answer = state.generation.clone().unwrap_or_default();
    state.finish(outcome, answer);
    StepOutput::end(details)
}
