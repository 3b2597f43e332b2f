//! A person in the loop: what a waiting run asks ([`Interrupt`]), what it was told
//! ([`Person`]), the consent gate in front of a step ([`gate`]) and an answer applied to a
//! waiting run ([`answer`]).
//!
//! A run waits through the engine ([`crate::engine::Transition::Wait`]): the step that asks
//! is recorded like any other and is not run again; the run goes on at the node the wait
//! named. Two things make a run ask:
//!
//! - **clarify** ([`super::clarify`]): the question refers to something nothing names ("How
//!   do I install it?" as a thread's first turn); the answer completes the question;
//! - **approve**: a step named in `APPROVE_STEPS` (web search) is about to run; approved, it
//!   runs; denied, the run goes on without it (`web_search` then takes another route, or
//!   answers with what it has), and it is not asked for again in the run.

use super::person::{Clarified, Consent, Interrupt, Reply};
use super::{RagGraph, RagNode, RagState};
use crate::config::Gated;
use crate::engine::{StepOutput, Transition};
use serde_json::json;

/// The step a node id is, when it can be gated.
fn gated(node: RagNode) -> Option<Gated> {
    match node {
        RagNode::WebSearch => Some(Gated::WebSearch),
        _ => None,
    }
}

/// Puts the consent gate in front of the step `out` goes to: a step that `APPROVE_STEPS`
/// names, configured, and not decided on yet in this run, is waited for instead
/// ([`Interrupt::Approve`]); the step that chose it is the one that asked.
pub(super) fn gate_step(
    graph: &RagGraph,
    state: &mut RagState,
    mut out: StepOutput<RagNode>,
) -> StepOutput<RagNode> {
    let gated = gate(graph, state, out.next);
    if gated != out.next {
        if let Some(interrupt) = &state.person.pending {
            out.details["interrupt"] = json!(interrupt);
        }
        out.next = gated;
    }
    out
}

/// [`gate_step`] for a transition without a record of its own (a speculation's join).
pub(super) fn gate(
    graph: &RagGraph,
    state: &mut RagState,
    next: Transition<RagNode>,
) -> Transition<RagNode> {
    let Transition::Next(node) = next else {
        return next;
    };
    let Some(step) = gated(node) else {
        return next;
    };
    let configured = match step {
        Gated::WebSearch => graph.web.is_some(),
    };
    if !graph.interrupts.gates(step) || !configured || state.person.consent(step).is_some() {
        return next;
    }
    let what = match step {
        Gated::WebSearch => state.query.clone(),
    };
    tracing::info!(step = step.as_str(), "waiting for approval");
    state.person.pending = Some(Interrupt::Approve { step, what });
    Transition::Wait(node)
}

/// Why an answer does not fit the run's question.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReplyError {
    /// The run asked for the other kind of answer.
    #[error("this run asks to {asked}: send {expected}")]
    Kind {
        /// What the run asked (`clarify`, `approve`).
        asked: &'static str,
        /// The field that answers it.
        expected: &'static str,
    },
    /// The answer is empty or too long.
    #[error(
        "the answer must be 1..={max} characters, and the question with it at most {question_max}"
    )]
    Length {
        /// Most characters of an answer.
        max: usize,
        /// Most characters of the clarified question.
        question_max: usize,
    },
    /// Nothing is asked (the run is not waiting).
    #[error("the run asks nothing")]
    NothingAsked,
}

/// Most characters of a clarifying answer.
pub(crate) const MAX_ANSWER_CHARS: usize = 500;

/// Applies `reply` to the waiting run's state (the run then goes on at the node its wait
/// named). The pending question is cleared; a clarification completes the question, a
/// consent decision is kept for the rest of the run.
pub(crate) fn answer(state: &mut RagState, reply: Reply) -> Result<(), ReplyError> {
    let Some(pending) = state.person.pending.clone() else {
        return Err(ReplyError::NothingAsked);
    };
    match (&pending, reply) {
        (Interrupt::Clarify { .. }, Reply::Answer(text)) => {
            let text = text.trim();
            let original = state.request.question.clone();
            let question = super::clarify::clarified(&original, text);
            let question_max = super::request::MAX_QUESTION_CHARS;
            let chars = text.chars().count();
            if chars == 0 || chars > MAX_ANSWER_CHARS || question.chars().count() > question_max {
                return Err(ReplyError::Length {
                    max: MAX_ANSWER_CHARS,
                    question_max,
                });
            }
            state.request.question = question.clone();
            state.query = question;
            state.person.clarified = Some(Clarified {
                original,
                answer: text.to_owned(),
            });
        }
        (Interrupt::Approve { step, .. }, Reply::Approve(approved)) => {
            state.person.consent.push(Consent {
                step: *step,
                approved,
            });
        }
        (asked, _) => {
            return Err(ReplyError::Kind {
                asked: asked.kind(),
                expected: match asked {
                    Interrupt::Clarify { .. } => "{\"answer\": \"...\"}",
                    Interrupt::Approve { .. } => "{\"approve\": true} or {\"approve\": false}",
                },
            })
        }
    }
    state.person.pending = None;
    Ok(())
}
