//! Speculation: a question that may go to the knowledge base is searched first (locally, in
//! milliseconds), then routing, document grading and a first answer over the passages found
//! run at once as branches of the engine fork `speculate`.
//!
//! The rule, applied by [`join`] once all three are recorded:
//! - route `kg_retrieval` and grading kept every passage (or grading is off): the speculative
//!   answer is the answer, and the run goes on to the checks as after `generate`;
//! - route `kg_retrieval` and grading dropped a passage: the answer is discarded (it was written
//!   from a passage judged irrelevant), unless it stands only on the passages the model's
//!   own grades kept (none overruled; written by the model, over the floor, and every passage
//!   attribution finds it standing on is a kept one: [`super::attribution::on_kept`]), when
//!   it is the answer, its markers renumbered to the kept passages; a discarded answer's run
//!   goes on with the kept passages exactly as after `grade_documents` (generate, rewrite, or
//!   the web fallback);
//! - route `web_search` or `llm_internal`: the answer is discarded, and so are the passages;
//!   the run goes on as after `route_question`.
//!
//! A discarded answer is told to watchers as `discarded` for its attempt (after its `token`s),
//! as for any rejected answer. Every speculative call counts in `model_calls` and tokens; the
//! tokens of calls whose result went unused (a discarded answer, and the grading of passages
//! the route did not use) are `wasted_tokens` in the metadata's `speculation`.

use super::model_call::call;
use super::nodes;
use super::speculating::{Grades, RagMerge, SpeculativeAnswer};
use super::{RagError, RagGraph, RagNode, RagState, RunEvent};
use crate::engine::{BranchOutput, StepCtx, Transition};
use crate::llm::{BinaryScore, DataSource, RouteDecision, Task};
use serde_json::json;

/// The branches of the fork over the passages found: routing always; grading (when the
/// request grades) and an answer only when there are passages to grade and answer from.
pub(super) fn branches(state: &RagState) -> Vec<RagNode> {
    let passages = !state.documents.is_empty();
    FORK.into_iter()
        .filter(|node| match node {
            RagNode::GradeDocuments => passages && state.request.grade_documents(),
            RagNode::Generate => passages,
            _ => true,
        })
        .collect()
}

/// Every branch the fork at `speculate` may run, in the order their step records are kept.
pub(super) const FORK: [RagNode; 3] = [
    RagNode::RouteQuestion,
    RagNode::GradeDocuments,
    RagNode::Generate,
];

/// Runs one branch over the state as it was when the fork started.
pub(super) async fn branch(
    graph: &RagGraph,
    node: RagNode,
    state: &RagState,
    ctx: &StepCtx<'_>,
) -> Result<BranchOutput<RagMerge>, RagError> {
    let question = state.question();
    match node {
        RagNode::GradeDocuments => {
            let grades = futures::future::try_join_all(state.documents.iter().map(|doc| {
                let doc = std::slice::from_ref(doc);
                call::<BinaryScore>(graph, ctx, Task::GradeDocuments, question, doc, None)
            }))
            .await?;
            let keep: Vec<bool> = grades.into_iter().map(BinaryScore::yes).collect();
            let relevant = keep.iter().filter(|k| **k).count();
            let details =
                json!({ "graded": keep.len(), "relevant": relevant, "speculative": true });
            Ok(BranchOutput {
                details,
                merge: RagMerge::Grades(Grades {
                    keep,
                    tokens: ctx.usage().total(),
                }),
            })
        }
        RagNode::Generate => {
            // The answer, or the extractive quote in its place with why and whether every
            // answer under the floor was written from memory.
            let (answered, fallback) =
                match super::answer::generate_or_quote(graph, ctx, state).await? {
                    Ok(answered) => (answered, None),
                    Err(fallback) => {
                        let quote = super::answer::Answered {
                            written: crate::llm::Written {
                                text: fallback.text,
                                finish: crate::llm::Finish::Stop,
                            },
                            attempt: fallback.attempt.max(state.generations + 1),
                            fit: Default::default(),
                            under_floor: None,
                            researched: None,
                            first_kept: false,
                        };
                        (
                            quote,
                            Some((fallback.why, fallback.error, fallback.from_memory)),
                        )
                    }
                };
            let from_memory = match &fallback {
                Some((_, _, from_memory)) => *from_memory,
                None => (answered.under_floor.as_ref()).is_some_and(|u| u.is_from_memory()),
            };
            let super::answer::Answered {
                written,
                attempt,
                fit,
                under_floor,
                researched,
                first_kept,
            } = answered;
            let mut details = json!({
                "documents": state.documents.len(),
                "regeneration": state.hallucination_retry_count,
                "attempt": attempt,
                "speculative": true,
            });
            fit.record(&mut details);
            if let Some(unusable) = &under_floor {
                details["under_floor"] = json!(unusable.describe());
            }
            if let Some((_, error, _)) = &fallback {
                details["fallback"] = json!("extractive");
                details["error"] = json!(error);
            }
            if first_kept {
                details["first_answer_kept"] = json!(true);
            }
            if let Some(found) = &researched {
                let sources: Vec<&str> = found.iter().map(|d| d.url.as_str()).collect();
                details["researched"] = json!(sources);
            }
            Ok(BranchOutput {
                details,
                merge: RagMerge::Answer(SpeculativeAnswer {
                    under_floor: under_floor.is_some()
                        || matches!(fallback, Some((super::quoted::Quoted::Unusable, _, _))),
                    from_memory,
                    quoted: fallback.as_ref().map(|(why, _, _)| *why),
                    researched,
                    cut: written.finish == crate::llm::Finish::Length,
                    answer: written.text,
                    attempt,
                    tokens: ctx.usage().total(),
                }),
            })
        }
        // Routing is the one branch every fork has.
        _ => {
            let decision: RouteDecision =
                call(graph, ctx, Task::RouteQuery, question, &[], None).await?;
            let (source, details) = super::nodes::settle_route(graph, decision.data_source);
            Ok(BranchOutput {
                details,
                merge: RagMerge::Route(source),
            })
        }
    }
}

/// Whether `branch` is still needed with what the finished branches merged: grading and the
/// answer are not once routing chose another source than the knowledge base.
pub(super) fn needed(branch: RagNode, state: &RagState) -> bool {
    match branch {
        RagNode::GradeDocuments | RagNode::Generate => state
            .route
            .is_none_or(|route| route == DataSource::KgRetrieval),
        _ => true,
    }
}

/// Keeps a finished branch's result until the join; the passages the siblings read stay as
/// they are.
pub(super) fn merge(state: &mut RagState, merge: RagMerge) {
    match merge {
        RagMerge::Route(route) => state.route = Some(route),
        RagMerge::Grades(grades) => state.speculation.grades = Some(grades),
        RagMerge::Answer(answer) => {
            state.speculation.stats.started += 1;
            state.speculation.answer = Some(answer);
        }
    }
}

/// Applies the rule of this module's documentation once every branch is merged.
pub(super) fn join(graph: &RagGraph, state: &mut RagState) -> Transition<RagNode> {
    let grades = state.speculation.grades.take();
    let answer = state.speculation.answer.take();
    // An answer under the floor shows the model unreliable, and its grades are doubted; but
    // one written from memory over passages every grade rejected agrees with the grades (the
    // passages do not answer), so they stand and the rewrite loop runs as designed.
    let rejected_all = grades
        .as_ref()
        .is_some_and(|g| !g.keep.is_empty() && g.keep.iter().all(|k| !k));
    if answer
        .as_ref()
        .is_some_and(|a| a.under_floor && !(a.from_memory && rejected_all))
    {
        state.model_doubted = true;
    }
    let mut route = state.route.unwrap_or(DataSource::KgRetrieval);
    if route == DataSource::LlmInternal
        && state.documents.iter().any(|d| d.clear_match)
        && !crate::llm::needs_no_documents(state.question())
    {
        // The search already found a clear match: the documents answer, not memory.
        tracing::info!("route llm_internal overruled: the retrieval found a clear match");
        route = DataSource::KgRetrieval;
        state.route = Some(route);
        state.route_overruled = true;
    }
    if route != DataSource::KgRetrieval {
        // The passages were not wanted: their grading and the answer from them are wasted.
        let graded = grades.as_ref().map_or(0, |g| g.tokens);
        state.speculation.stats.wasted_tokens += graded;
        if let Some(answer) = answer {
            discard(graph, state, answer);
        }
        state.documents.clear();
        state.graded_out.clear();
        let next = match route {
            DataSource::WebSearch => RagNode::WebSearch,
            _ => RagNode::Generate,
        };
        return Transition::Next(next);
    }
    // Whether a rule turned one of the model's grades.
    let mut overruled_any = false;
    let keep = grades.map(|g| {
        let mut said = g.keep;
        // An answer the model wrote from these passages, passing the floor, that stands on a
        // passage it graded irrelevant: the words side with the answer.
        let written = answer
            .as_ref()
            .filter(|a| a.quoted.is_none() && !a.under_floor);
        if let Some(written) = written {
            let question = state.question();
            let found = super::overrule::answers_passages(
                &state.documents,
                &mut said,
                &written.answer,
                question,
            );
            if let Some(overruled) = found {
                tracing::info!(%overruled, "speculative grades overruled by the answer's passages");
                state.model_doubted = true;
                overruled_any = true;
            }
        }
        let (keep, overruled) =
            super::overrule::relevance(&state.documents, &said, state.model_doubted);
        if let Some(overruled) = overruled {
            tracing::info!(%overruled, "speculative grades overruled");
            overruled_any = true;
        }
        keep
    });
    let kept_all = keep.as_ref().is_none_or(|k| k.iter().all(|k| *k));
    // Grading dropped passages, but the answer stands only on those it kept: it is the answer
    // it would have been from them (its markers renumbered to them). Only the model's own
    // grades choose them: a passage kept because the answer stands on it proves nothing.
    let on_kept = match (&answer, &keep) {
        (Some(written), Some(keep))
            if !kept_all
                && !overruled_any
                && keep.iter().any(|k| *k)
                && written.quoted.is_none()
                && !written.under_floor
                && written.researched.is_none() =>
        {
            let question = state.question();
            super::attribution::on_kept(&written.answer, question, &state.documents, keep)
        }
        _ => None,
    };
    if let Some(keep) = keep {
        state.set_aside(&keep);
    }
    match (answer, on_kept) {
        (Some(mut answer), Some(text)) => {
            tracing::info!(
                "speculative answer kept: it stands only on the passages graded relevant"
            );
            answer.answer = text;
            use_answer(graph, state, answer)
        }
        (Some(answer), None) if kept_all => use_answer(graph, state, answer),
        (answer, _) => {
            if let Some(answer) = answer {
                discard(graph, state, answer);
            }
            let relevant = state.documents.len();
            Transition::Next(nodes::decide_to_generate(graph, state, relevant).0)
        }
    }
}

/// The speculative answer becomes the run's answer; the run goes on to the checks.
fn use_answer(
    graph: &RagGraph,
    state: &mut RagState,
    answer: SpeculativeAnswer,
) -> Transition<RagNode> {
    state.speculation.stats.used += 1;
    state.generations = answer.attempt;
    state.generation = Some(answer.answer);
    state.answer_cut = answer.cut;
    if let Some(found) = answer.researched {
        // Written from memory; these passages hold what it says.
        state.documents = found;
    }
    if let Some(why) = answer.quoted {
        state.quoted(why);
    }
    state.answer_check = None;
    nodes::after_answer(graph, state, json!({})).next
}

/// Drops a speculative answer: counted, its tokens wasted, and its attempt `discarded`.
fn discard(graph: &RagGraph, state: &mut RagState, answer: SpeculativeAnswer) {
    let stats = &mut state.speculation.stats;
    stats.discarded += 1;
    stats.wasted_tokens += answer.tokens;
    state.generations = answer.attempt;
    tracing::info!(attempt = answer.attempt, "speculative answer discarded");
    graph.events.emit(RunEvent::Discarded {
        attempt: answer.attempt,
    });
}

#[cfg(test)]
#[path = "speculation_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "speculation_unavailable_tests.rs"]
mod unavailable_tests;

#[cfg(test)]
#[path = "speculation_web_tests.rs"]
mod web_tests;

#[cfg(test)]
#[path = "speculation_rewrite_tests.rs"]
mod rewrite_tests;
