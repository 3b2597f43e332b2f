//! The caller-facing answer (DESIGN.md "HTTP API"), built from a checkpoint.

use super::{AttributionReport, Citation, LimitHit, Outcome, RagNode, RagState, SpeculationStats};
use crate::engine::{Checkpoint, FailedAt, NodeFailure, Phase, StepRecord};
use crate::llm::DataSource;
use crate::search::RetrievalMode;
use crate::store::ListedStatus;
use crate::usage::Usage;
use serde::{Deserialize, Serialize};

/// A run's status as callers see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Queued or being advanced.
    Running,
    /// Answered, grounded and useful (or unchecked by request).
    Completed,
    /// The best answer available, marked with a disclaimer; `limits_hit` says why.
    BestEffort,
    /// Out of time in this invocation; a continuation is queued.
    Suspended,
    /// A node failed; `error` says why.
    Failed,
    /// Stopped by its caller; the answer so far (if any) is kept.
    Cancelled,
    /// Waiting for a person: `interrupt` says what it asks; answer with
    /// `POST /workflow/runs/{run_id}/resume`.
    Waiting,
}

impl RunStatus {
    /// Every status, in wire order.
    pub(crate) const ALL: [RunStatus; 7] = [
        RunStatus::Running,
        RunStatus::Completed,
        RunStatus::BestEffort,
        RunStatus::Suspended,
        RunStatus::Failed,
        RunStatus::Cancelled,
        RunStatus::Waiting,
    ];

    /// Wire name (`best_effort`, `cancelled`, ...).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::BestEffort => "best_effort",
            RunStatus::Suspended => "suspended",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Waiting => "waiting",
        }
    }

    /// True once the run can never change again: `completed`, `best_effort`, `failed` or
    /// `cancelled` (a `failed` run is only continued by its caller repeating it).
    pub(crate) fn is_final(self) -> bool {
        match self {
            RunStatus::Completed
            | RunStatus::BestEffort
            | RunStatus::Failed
            | RunStatus::Cancelled => true,
            RunStatus::Running | RunStatus::Suspended | RunStatus::Waiting => false,
        }
    }
}

/// The status a run's checkpoint is listed with in the store (same wire name).
impl From<RunStatus> for ListedStatus {
    fn from(status: RunStatus) -> Self {
        match status {
            RunStatus::Running => ListedStatus::Running,
            RunStatus::Completed => ListedStatus::Completed,
            RunStatus::BestEffort => ListedStatus::BestEffort,
            RunStatus::Suspended => ListedStatus::Suspended,
            RunStatus::Failed => ListedStatus::Failed,
            RunStatus::Cancelled => ListedStatus::Cancelled,
            RunStatus::Waiting => ListedStatus::Waiting,
        }
    }
}

/// Counters and limits of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// Steps taken across every invocation.
    pub total_steps: u32,
    /// Seconds spent in steps.
    pub(crate) total_processing_time: f64,
    /// Limits that shaped the answer, in the order they were hit.
    pub limits_hit: Vec<LimitHit>,
    /// Query rewrites.
    pub query_transformation_retry_count: u32,
    /// Regenerations of ungrounded answers.
    pub hallucination_retry_count: u32,
    /// Route chosen.
    pub route: Option<DataSource>,
    /// The router chose the model alone over a clear match the retrieval had found, and the
    /// run answered from the knowledge base instead.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub route_overruled: bool,
    /// Whether the web-search fallback ran.
    pub web_fallback: bool,
    /// Whether web search was wanted but not configured.
    pub web_search_unavailable: bool,
    /// Silent infrastructure retries (timeouts, 5xx, 429).
    pub infrastructure_retries: u32,
    /// Model provider (`openai`, `offline`).
    pub provider: String,
    /// Tokens used by the run, across every invocation.
    pub tokens: Tokens,
    /// Model replies received (re-asks included; cache hits excluded).
    pub model_calls: u32,
    /// Model replies served from the response cache (`LLM_CACHE_TTL_SECONDS`).
    pub cache_hits: u32,
    /// The knowledge-base version the run searched (a bundle's content hash).
    #[serde(default)]
    pub kb_version: Option<String>,
    /// The knowledge-base retrieval of the run: `bm25` or `hybrid`.
    #[serde(default)]
    pub retrieval: Option<RetrievalMode>,
    /// Speculative answers started, used and discarded, and the tokens speculation wasted.
    #[serde(default)]
    pub(crate) speculation: SpeculationStats,
    /// The thread the run is a turn of (request field `thread_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The run's turn number in its thread (1 for the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// The follow-up rewritten to stand alone (`contextualize_question`), when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standalone_question: Option<String>,
    /// The question as the person's answer to `clarify` completed it, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clarified_question: Option<String>,
    /// Consent decisions on the steps that waited for one (`APPROVE_STEPS`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<Approval>,
    /// The run and step this run was forked from (`POST /workflow/runs/{run_id}/fork`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<super::ForkedFrom>,
    /// How the answer's sentences stand on its passages: judged, supported, unsupported (as
    /// written), and which citations the model wrote and which the service attributed. Set
    /// once a run drawn from documents has ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<AttributionReport>,
}

/// A consent decision, as the response shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// The step that waited (`web_search`).
    pub step: crate::config::Gated,
    /// Given or refused.
    pub approved: bool,
}

/// What a waiting run asks, and until when it waits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitingFor {
    /// `kind` (`clarify`, `approve`) and its fields.
    #[serde(flatten)]
    pub interrupt: super::Interrupt,
    /// When the wait runs out (RFC 3339): the run then ends `best_effort` with
    /// `interrupt_timeout`.
    pub expires_at: String,
}

/// Tokens used by a run: as the provider reported them, or estimated when it reported none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// Prompt (input) tokens.
    pub prompt: u64,
    /// Completion (output) tokens.
    pub completion: u64,
    /// Their sum.
    pub total: u64,
    /// True when any call's tokens were estimated (the provider sent no `usage`).
    pub estimated: bool,
}

impl From<&Usage> for Tokens {
    fn from(usage: &Usage) -> Self {
        Self {
            prompt: usage.prompt_tokens,
            completion: usage.completion_tokens,
            total: usage.total(),
            estimated: usage.estimated,
        }
    }
}

/// What to do about a run that ended `failed`, by the failure's class.
pub(crate) fn failed_run_hint(class: crate::error::ErrorClass) -> &'static str {
    match class {
        crate::error::ErrorClass::Transient => {
            "a service the run depends on was unavailable; the run kept its progress. Send it \
             again as POST /workflow/run with the same Idempotency-Key to continue it (without \
             one, a new request starts over; the CLI continues it with `ask --resume RUN_ID`)"
        }
        crate::error::ErrorClass::Permanent => {
            "the run cannot succeed as it is, and the same request will fail the same way: \
             change the request if the message is about it, otherwise report the message to the \
             operator (it names the model, search or configuration problem)"
        }
    }
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunError {
    /// Where it failed: a node, or `queue`.
    pub node: FailedAt<RagNode>,
    /// `transient` (may succeed if resumed) or `permanent`.
    pub class: crate::error::ErrorClass,
    /// Message.
    pub message: String,
    /// What the caller can do about it.
    #[serde(default)]
    pub hint: String,
}

/// The full answer of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResponse {
    /// True for `completed` and `best_effort`.
    pub success: bool,
    /// Status.
    pub status: RunStatus,
    /// Run id.
    pub run_id: String,
    /// The answer (with a disclaimer when best-effort); empty while running.
    pub answer: String,
    /// The question as asked.
    pub question: String,
    /// Executed steps.
    pub workflow_steps: Vec<StepRecord<RagNode>>,
    /// Sources of the answer.
    pub citations: Vec<Citation>,
    /// Counters and limits.
    pub metadata: Metadata,
    /// Set when `status` is `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
    /// Set when `status` is `waiting`: what the run asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupt: Option<WaitingFor>,
}

impl RunResponse {
    /// Builds the response of a checkpoint.
    pub(crate) fn from_checkpoint(cp: &Checkpoint<RagState, RagNode>, provider: &str) -> Self {
        let state = &cp.state;
        let status = status_of(cp);
        let mut limits_hit: Vec<LimitHit> = cp.limits_hit.iter().map(|&l| l.into()).collect();
        if let Some(Outcome::BestEffort(reason)) = state.outcome {
            let reason = LimitHit::from(reason);
            if !limits_hit.contains(&reason) {
                limits_hit.push(reason);
            }
        }
        // A cut answer that another limit also shaped says both.
        if state.answer_cut
            && state.answer.is_some()
            && !limits_hit.contains(&LimitHit::AnswerLength)
        {
            limits_hit.push(LimitHit::AnswerLength);
        }
        let answered = state.answer.is_some();
        Self {
            success: matches!(status, RunStatus::Completed | RunStatus::BestEffort),
            status,
            run_id: cp.run_id.clone(),
            answer: state.answer.clone().unwrap_or_default(),
            // As asked: a follow-up's standalone rewrite and a clarified question are in
            // the metadata.
            question: match (&state.thread, &state.person.clarified) {
                (Some(thread), _) => thread.question.clone(),
                (None, Some(clarified)) => clarified.original.clone(),
                (None, None) => state.request.question.clone(),
            },
            workflow_steps: cp.records[..shown_steps(cp)].to_vec(),
            // A best-effort answer extracted from the documents cites them too.
            citations: if answered {
                state.citations()
            } else {
                Vec::new()
            },
            metadata: Metadata {
                total_steps: cp.steps,
                total_processing_time: cp.total_processing_time(),
                limits_hit,
                query_transformation_retry_count: state.query_transformation_retry_count,
                hallucination_retry_count: state.hallucination_retry_count,
                route: state.route,
                route_overruled: state.route_overruled,
                web_fallback: state.web_fallback,
                web_search_unavailable: state.web_search_unavailable,
                infrastructure_retries: cp.infra_retries,
                provider: provider.to_owned(),
                tokens: Tokens::from(&cp.usage),
                model_calls: cp.usage.model_calls,
                cache_hits: cp.usage.cache_hits,
                kb_version: state.kb_version.clone(),
                retrieval: state.retrieval,
                speculation: state.speculation.stats,
                thread_id: state.thread.as_ref().map(|t| t.thread_id.clone()),
                turn: state.thread.as_ref().map(|t| t.turn),
                standalone_question: state
                    .thread
                    .as_ref()
                    .and_then(|t| t.standalone_question.clone()),
                clarified_question: state
                    .person
                    .clarified
                    .as_ref()
                    .map(|_| state.request.question.clone()),
                approvals: state
                    .person
                    .consent
                    .iter()
                    .map(|c| Approval {
                        step: c.step,
                        approved: c.approved,
                    })
                    .collect(),
                forked_from: state.forked_from.clone(),
                attribution: state.attribution.as_ref().map(|a| a.report.clone()),
            },
            error: cp
                .failure
                .as_ref()
                .map(|f: &NodeFailure<RagNode>| RunError {
                    node: f.node,
                    class: f.class,
                    message: f.message.clone(),
                    hint: match f.node {
                        // The message names both versions.
                        FailedAt::Version => format!(
                            "{}: re-submit the question as a new run (POST /workflow/runs or \
                             POST /workflow/run without this run's Idempotency-Key)",
                            f.message
                        ),
                        _ => failed_run_hint(f.class).to_owned(),
                    },
                }),
            interrupt: waiting_for(cp),
        }
    }
}

/// What a waiting run asks; `None` unless it waits.
fn waiting_for(cp: &Checkpoint<RagState, RagNode>) -> Option<WaitingFor> {
    if cp.phase != Phase::Waiting {
        return None;
    }
    Some(WaitingFor {
        interrupt: cp.state.person.pending.clone()?,
        expires_at: crate::clock::rfc3339_ms(cp.waiting_until_ms.unwrap_or_default()),
    })
}

pub(crate) fn status_of(cp: &Checkpoint<RagState, RagNode>) -> RunStatus {
    status_from(cp.phase, cp.state.outcome)
}

/// The status of a run in `phase` whose workflow ended with `outcome`.
/// How many of a run's records its caller sees: every one once the run ended; while it may
/// still advance, the settled ones ([`Checkpoint::settled_records`]: a branch still running
/// is recorded before siblings that finished earlier), so a step's number never changes
/// between two reads, a live stream and a replay.
fn shown_steps(cp: &Checkpoint<RagState, RagNode>) -> usize {
    match cp.phase {
        Phase::Finished | Phase::Failed | Phase::Waiting => cp.records.len(),
        Phase::Running | Phase::Stopped => cp.settled_records(),
    }
}

pub(crate) fn status_from(phase: Phase, outcome: Option<Outcome>) -> RunStatus {
    match phase {
        Phase::Running => RunStatus::Running,
        Phase::Failed => RunStatus::Failed,
        Phase::Waiting => RunStatus::Waiting,
        Phase::Finished | Phase::Stopped => match outcome {
            Some(Outcome::Completed) => RunStatus::Completed,
            Some(Outcome::Suspended) => RunStatus::Suspended,
            Some(Outcome::Cancelled) => RunStatus::Cancelled,
            Some(Outcome::BestEffort(_)) | None => RunStatus::BestEffort,
        },
    }
}
