//! The node bodies and the routers after them. Each node does its I/O first, then updates the
//! state, then names the next node; every loop is bounded by a counter checked here and by the
//! engine's step limit and deadline.

use super::answer::generate_or_quote;
use super::model_call::{call, call_fitted};
use super::prompt_fit::Fit;
use super::{BestEffortReason, Outcome, RagError, RagGraph, RagNode, RagState, RunEvent};
use crate::engine::{StepCtx, StepOutput};
use crate::llm::{BinaryScore, DataSource, Finish, Refined, RouteDecision, Task};
use serde_json::json;

pub(super) type Step = Result<StepOutput<RagNode>, RagError>;

/// How many passages judged irrelevant the rewrite is shown (their headings only).
const REJECTED_SHOWN: usize = 5;

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
    let (source, details) = settle_route(graph, decision.data_source);
    state.route = Some(source);
    let next = match source {
        DataSource::KgRetrieval => RagNode::KgRetrieval,
        DataSource::WebSearch => RagNode::WebSearch,
        DataSource::LlmInternal => RagNode::Generate,
    };
    Ok(StepOutput::next(next, details))
}

/// The source a router's choice settles on ([`RagGraph::available_source`]), logged, with the
/// routing step's details: the source taken, and the router's own choice when it was not
/// available. Both routing sites (the node and speculation's branch) go through it.
pub(super) fn settle_route(
    graph: &RagGraph,
    chosen: DataSource,
) -> (DataSource, serde_json::Value) {
    let taken = graph.available_source(chosen);
    tracing::info!(route = taken.as_str(), "route chosen");
    let details = if chosen == taken {
        json!({ "data_source": taken })
    } else {
        json!({ "data_source": taken, "chosen": chosen, "unavailable": true })
    };
    (taken, details)
}

pub(super) async fn grade_documents(
    graph: &RagGraph,
    state: &mut RagState,
    ctx: &StepCtx<'_>,
) -> Step {
    let question = state.request.question.as_str();
    let grades = futures::future::try_join_all(state.documents.iter().map(|doc| {
        call_fitted::<BinaryScore>(
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
    let fit = grades
        .iter()
        .fold(Fit::default(), |all, (_, fit)| all.add(*fit));
    let said: Vec<bool> = grades.iter().map(|(g, _)| g.yes()).collect();
    let (mut kept, mut overruled) =
        super::overrule::relevance(&state.documents, &said, state.model_doubted);
    if state.query_is_answer {
        if let Some(found) =
            super::overrule::rewrites_find(&state.documents, &mut kept, &state.query)
        {
            // The model rejected what its own answer's words found: one of its two verdicts
            // is wrong, and the words side with the answer.
            state.model_doubted = true;
            overruled = Some(found);
        }
    }
    state.set_aside(&kept);
    let relevant = state.documents.len();
    let (next, decision) = decide_to_generate(graph, state, relevant);
    let mut details = json!({ "graded": graded, "relevant": relevant, "decision": decision });
    if let Some(overruled) = overruled {
        details["overruled"] = overruled;
    }
    fit.record(&mut details);
    Ok(StepOutput::next(next, details))
}

/// The rewrite loop ended early: the rewritten query retrieved the same passages. Without a
/// relevant passage the run falls back to web search as when the rewrites run out; with the
/// passages of a not-useful answer, it ends with that answer (`max_retries`).
pub(super) fn same_passages(
    state: &mut RagState,
    mut details: serde_json::Value,
) -> StepOutput<RagNode> {
    details["same_passages"] = json!(true);
    tracing::info!("the rewrite retrieved the same passages: ending the rewrite loop");
    if !state.documents.is_empty() && state.generation.is_some() {
        details["decision"] = json!("max_retries");
        return end(
            state,
            Outcome::BestEffort(BestEffortReason::MaxQueryRewrites),
            details,
        );
    }
    state.web_fallback = true;
    details["decision"] = json!("web_search_fallback");
    StepOutput::next(RagNode::WebSearch, details)
}

/// `decide_to_generate`: relevant documents -> generate; none -> rewrite while rewrites remain;
/// rewrites exhausted -> web-search fallback.
pub(super) fn decide_to_generate(
    graph: &RagGraph,
    state: &mut RagState,
    relevant: usize,
) -> (RagNode, &'static str) {
    let max = graph.limits.max_query_rewrites;
    if relevant > 0 {
        (RagNode::Generate, "generate")
    } else if state.query_transformation_retry_count < max {
        (RagNode::TransformQuery, "transform_query")
    } else {
        tracing::warn!("max query rewrites reached ({max}/{max}): falling back to web search");
        state.web_fallback = true;
        (RagNode::WebSearch, "web_search_fallback")
    }
}

pub(super) async fn transform_query(
    graph: &RagGraph,
    state: &mut RagState,
    ctx: &StepCtx<'_>,
) -> Step {
    // The rewrite sees the question, the last search and what it found that did not answer
    // (their headings), so it can search in other words: those of a document that answers.
    let question = state.request.question.as_str();
    let rejected: Vec<_> = state
        .graded_out
        .iter()
        .take(REJECTED_SHOWN)
        .cloned()
        .collect();
    let last = Some(state.query.as_str());
    let refined: Refined = call(graph, ctx, Task::RefineQuery, question, &rejected, last).await?;
    state.query_transformation_retry_count += 1;
    let n = state.query_transformation_retry_count;
    let max = graph.limits.max_query_rewrites;
    tracing::info!("query rewrite: retry {n}/{max}");
    // A hypothetical answer is searched by its lead sentence and the names it gives, not by
    // the paragraph a small model may write instead of the one sentence asked for.
    state.query = if refined.hypothetical {
        super::research::query_of(&refined.refined_question, question)
    } else {
        refined.refined_question
    };
    state.query_is_answer = refined.hypothetical;
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

pub(super) async fn generate(graph: &RagGraph, state: &mut RagState, ctx: &StepCtx<'_>) -> Step {
    let answered = match generate_or_quote(graph, ctx, state).await? {
        Ok(answered) => answered,
        Err(fallback) => {
            if let Some(documents) = fallback.documents {
                // Quoted from every passage retrieved: they are its sources.
                state.documents = documents;
                state.graded_out.clear();
            }
            state.generation = Some(fallback.text);
            state.model_doubted |= fallback.why == super::quoted::Quoted::Unusable;
            state.quoted(fallback.why);
            state.generations = state.generations.max(fallback.attempt);
            let details = json!({
                "documents": state.documents.len(),
                "fallback": "extractive",
                "error": fallback.error,
            });
            return Ok(after_answer(graph, state, details));
        }
    };
    let (written, attempt, fit) = (answered.written, answered.attempt, answered.fit);
    if answered.researched.is_none()
        && state.documents.is_empty()
        && state.route != Some(DataSource::LlmInternal)
        && answered.under_floor.is_none()
    {
        // Wanted sources, found none: search once more with the answer's own words, and
        // ask for the answer again from the passages that hold what it says.
        let found = super::research::sources_for_answer(graph, state, ctx, &written.text).await;
        if let Some(found) = found {
            graph.events.emit(RunEvent::Discarded { attempt });
            let sources: Vec<&str> = found.iter().map(|d| d.url.as_str()).collect();
            let mut details = json!({
                "documents": 0,
                "attempt": attempt,
                "researched": sources,
                "decision": "generate",
            });
            fit.record(&mut details);
            state.generation = Some(written.text);
            state.generations = attempt;
            state.documents = found;
            return Ok(StepOutput::next(RagNode::Generate, details));
        }
    }
    let researched = answered.researched;
    let cut = written.finish == Finish::Length;
    state.generation = Some(written.text);
    state.answer_cut = cut;
    state.generations = attempt;
    state.answer_check = None;
    let mut details = json!({
        "documents": state.documents.len(),
        "regeneration": state.hallucination_retry_count,
        "attempt": attempt,
    });
    if cut {
        details["answer_length"] = json!(true);
    }
    if let Some(found) = researched {
        let sources: Vec<&str> = found.iter().map(|d| d.url.as_str()).collect();
        details["researched"] = json!(sources);
        state.documents = found;
    }
    if answered.first_kept {
        details["first_answer_kept"] = json!(true);
    }
    if let Some(unusable) = answered.under_floor {
        state.model_doubted = true;
        details["under_floor"] = json!(unusable.describe());
    }
    fit.record(&mut details);
    Ok(after_answer(graph, state, details))
}

/// Where the run goes once an answer is written (by `generate`, or by speculation).
pub(super) fn after_answer(
    graph: &RagGraph,
    state: &mut RagState,
    mut details: serde_json::Value,
) -> StepOutput<RagNode> {
    if state.model_unavailable || state.model_unusable {
        // Quoted from the documents: nothing for the model to check.
        let reason = if state.model_unusable {
            BestEffortReason::ModelUnusable
        } else {
            BestEffortReason::ModelUnavailable
        };
        return end(state, Outcome::BestEffort(reason), details);
    }
    let no_context = state.documents.is_empty();
    if no_context && state.route != Some(DataSource::LlmInternal) {
        // Wanted sources, found none: answer from the model alone, clearly marked.
        return end(
            state,
            Outcome::BestEffort(BestEffortReason::NoSources),
            details,
        );
    }
    if !no_context && do_not_answer(state) {
        // The model's own verdict on the passages its grades kept: they are set aside as a
        // `no` would set them, and the run goes where no relevant passage leads (a rewrite
        // while rewrites remain), the answer unchecked.
        graph.events.emit(RunEvent::Discarded {
            attempt: state.generations,
        });
        state.set_aside(&[]);
        let (next, decision) = decide_to_generate(graph, state, 0);
        details["documents_do_not_answer"] = json!(true);
        details["decision"] = json!(decision);
        return StepOutput::next(next, details);
    }
    if state.request.check_hallucinations() && !no_context {
        return StepOutput::next(RagNode::GradeHallucinations, details);
    }
    grade_answer_or_end(state, details)
}

/// True when the answer opens by saying that the passages of the knowledge base it was given
/// do not answer ([`super::floor::opens_saying_they_do_not_answer`]). Not after the web
/// fallback: the rewrites are spent. (A clear match does not keep them: seen with Qwen, the
/// question's rare words "room" and "disk" in `zipsplit`'s page.)
fn do_not_answer(state: &RagState) -> bool {
    state.route == Some(DataSource::KgRetrieval)
        && !state.web_fallback
        && state
            .generation
            .as_deref()
            .is_some_and(super::floor::opens_saying_they_do_not_answer)
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
    let question = state.request.question.as_str();
    let answer = state.generation.as_deref();
    let grounded = call_fitted::<BinaryScore>(
        graph,
        ctx,
        Task::GradeHallucinations,
        question,
        &state.documents,
        answer,
    );
    // The answer check does not wait for this one: both are asked at once, and its verdict
    // counts only if the answer is grounded (one extra call when it is not, none otherwise).
    let ((grade, fit), useful) = if state.request.check_answer() {
        let useful = call::<BinaryScore>(graph, ctx, Task::GradeAnswer, question, &[], answer);
        let (grade, useful) = futures::future::try_join(grounded, useful).await?;
        (grade, Some(useful.yes()))
    } else {
        (grounded.await?, None)
    };
    let max = graph.limits.max_regenerations;
    let written = answer.unwrap_or_default();
    let (yes, overruled) =
        super::overrule::grounded(written, question, &state.documents, grade.yes());
    if yes {
        state.answer_check = useful;
        let mut details = json!({ "grounded": true, "answer_checked": useful.is_some() });
        fit.record(&mut details);
        return Ok(grade_answer_or_end(state, details));
    }
    if state.hallucination_retry_count < max {
        graph.events.emit(RunEvent::Discarded {
            attempt: state.generations,
        });
        state.hallucination_retry_count += 1;
        let n = state.hallucination_retry_count;
        tracing::info!("answer not grounded: regeneration retry {n}/{max}");
        let mut details = json!({ "grounded": false, "retry": format!("{n}/{max}") });
        if let Some(overruled) = overruled {
            details["overruled"] = overruled;
        }
        return Ok(StepOutput::next(RagNode::Generate, details));
    }
    tracing::warn!("max retries reached ({max}/{max} regenerations): ending best-effort");
    let mut details = json!({ "grounded": false, "decision": "max_regenerations" });
    if let Some(overruled) = overruled {
        details["overruled"] = overruled;
    }
    Ok(end(
        state,
        Outcome::BestEffort(BestEffortReason::MaxRegenerations),
        details,
    ))
}

pub(super) async fn grade_answer(
    graph: &RagGraph,
    state: &mut RagState,
    ctx: &StepCtx<'_>,
) -> Step {
    // Asked together with the groundedness check when both are on; else asked now.
    let (useful, asked_with) = match state.answer_check {
        Some(useful) => (useful, "grade_hallucinations"),
        None => {
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
            (grade.yes(), "grade_answer")
        }
    };
    state.answer_check = None;
    if useful {
        return Ok(end(
            state,
            Outcome::Completed,
            json!({ "useful": true, "asked_with": asked_with }),
        ));
    }
    let max = graph.limits.max_query_rewrites;
    if state.query_transformation_retry_count < max {
        graph.events.emit(RunEvent::Discarded {
            attempt: state.generations,
        });
        return Ok(StepOutput::next(
            RagNode::TransformQuery,
            json!({ "useful": false, "decision": "transform_query", "asked_with": asked_with }),
        ));
    }
    tracing::warn!("max query rewrites reached ({max}/{max}): ending best-effort");
    Ok(end(
        state,
        Outcome::BestEffort(BestEffortReason::MaxQueryRewrites),
        json!({ "useful": false, "decision": "max_retries", "asked_with": asked_with }),
    ))
}

fn end(state: &mut RagState, outcome: Outcome, details: serde_json::Value) -> StepOutput<RagNode> {
    let answer = state.generation.clone().unwrap_or_default();
    // An answer cut at its cap is kept, and the run says so.
    let outcome = match outcome {
        Outcome::Completed if state.answer_cut => {
            Outcome::BestEffort(BestEffortReason::AnswerLength)
        }
        other => other,
    };
    state.finish(outcome, answer);
    StepOutput::end(details)
}
