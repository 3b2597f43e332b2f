//! The engine hooks of the adaptive-RAG graph (`impl Graph for RagGraph`): where a run starts,
//! the retry policy and estimates of each node, the node bodies, the speculation fork and what
//! a limit leaves the caller.

use super::speculating::RagMerge;
use super::speculation;
use super::{
    fetch, nodes, prompts, BestEffortReason, Outcome, RagError, RagGraph, RagNode, RagState,
};
use crate::engine::{BranchOutput, Graph, Limit, StepCtx, StepOutput, Transition};
use crate::knowledge::Document;
use crate::llm::Task;
use crate::retry::RetryPolicy;
use crate::usage::estimate_tokens;
use async_trait::async_trait;
use std::time::Duration;

#[async_trait]
impl Graph for RagGraph {
    type State = RagState;
    type Node = RagNode;
    type Error = RagError;
    type Merge = RagMerge;

    fn start(&self, state: &RagState) -> RagNode {
        // A thread's follow-up is made to stand alone first.
        if state.thread.as_ref().is_some_and(|t| !t.history.is_empty()) {
            return RagNode::ContextualizeQuestion;
        }
        // A question whose subject nothing names is asked back, not guessed at.
        if super::clarify::needed(self, state) {
            return RagNode::Clarify;
        }
        self.entry(state)
    }

    fn wait_limit(&self) -> Duration {
        self.interrupts.timeout
    }

    fn retry_policy(&self, node: RagNode) -> RetryPolicy {
        match node {
            // Only the query's embedding and rerank calls are remote; a local search error is
            // permanent.
            RagNode::KgRetrieval
                if self.embedder.is_none() && self.reranker.is_none() && !self.kb.is_remote() =>
            {
                RetryPolicy::NONE
            }
            _ => self.remote_policy,
        }
    }

    fn estimate(&self, node: RagNode) -> Duration {
        match node {
            RagNode::KgRetrieval => Duration::from_millis(5),
            _ => Duration::from_millis(50),
        }
    }

    fn token_estimate(&self, node: RagNode, state: &RagState) -> u64 {
        let question = state.request.question.as_str();
        let answer = state.generation.as_deref();
        let one = |task: Task, documents: &[Document], answer: Option<&str>| {
            prompts::messages(
                task,
                question,
                documents,
                answer,
                self.routing(task).as_ref(),
            )
            .iter()
            .map(|m| estimate_tokens(&m.content))
            .sum::<u64>()
                + task.expected_completion_tokens()
        };
        match node {
            RagNode::KgRetrieval => match state.retrieval {
                Some(mode) if mode.is_hybrid() => estimate_tokens(&state.query),
                _ => 0,
            },
            RagNode::WebSearch | RagNode::Speculate | RagNode::Clarify => 0,
            RagNode::ContextualizeQuestion => {
                one(Task::ContextualizeQuestion, &[], None) + super::thread::estimate_history(state)
            }
            RagNode::RouteQuestion => one(Task::RouteQuery, &[], None),
            RagNode::TransformQuery => one(Task::RefineQuery, &[], None),
            RagNode::GradeDocuments => state
                .documents
                .iter()
                .map(|d| one(Task::GradeDocuments, std::slice::from_ref(d), None))
                .sum(),
            RagNode::Generate => {
                one(Task::GenerateAnswer, &state.documents, None)
                    + super::thread::estimate_history(state)
            }
            RagNode::GradeHallucinations => {
                let answer_check = if state.request.check_answer() {
                    one(Task::GradeAnswer, &[], answer)
                } else {
                    0
                };
                one(Task::GradeHallucinations, &state.documents, answer) + answer_check
            }
            RagNode::GradeAnswer if state.answer_check.is_some() => 0,
            RagNode::GradeAnswer => one(Task::GradeAnswer, &[], answer),
        }
    }

    async fn step(
        &self,
        node: RagNode,
        state: &mut RagState,
        ctx: &StepCtx<'_>,
    ) -> Result<StepOutput<RagNode>, RagError> {
        let out = match node {
            RagNode::ContextualizeQuestion => {
                super::thread::contextualize_question(self, state, ctx).await
            }
            RagNode::Clarify => super::clarify::clarify(self, state).await,
            // A fork always has branches; run as a step, it would start by routing.
            RagNode::RouteQuestion | RagNode::Speculate => {
                nodes::route_question(self, state, ctx).await
            }
            RagNode::KgRetrieval => fetch::kg_retrieval(self, state, ctx).await,
            RagNode::GradeDocuments => nodes::grade_documents(self, state, ctx).await,
            RagNode::TransformQuery => nodes::transform_query(self, state, ctx).await,
            RagNode::WebSearch => fetch::web_search(self, state, ctx).await,
            RagNode::Generate => nodes::generate(self, state, ctx).await,
            RagNode::GradeHallucinations => nodes::grade_hallucinations(self, state, ctx).await,
            RagNode::GradeAnswer => nodes::grade_answer(self, state, ctx).await,
        }?;
        // A step about to run without consent it needs waits for it instead.
        Ok(super::interrupt::gate_step(self, state, out))
    }

    fn branches(&self, node: RagNode, state: &RagState) -> Vec<RagNode> {
        match node {
            RagNode::Speculate => speculation::branches(state),
            _ => Vec::new(),
        }
    }

    async fn branch(
        &self,
        node: RagNode,
        state: &RagState,
        ctx: &StepCtx<'_>,
    ) -> Result<BranchOutput<RagMerge>, RagError> {
        speculation::branch(self, node, state, ctx).await
    }

    fn merge(&self, state: &mut RagState, merge: RagMerge) {
        speculation::merge(state, merge);
    }

    fn join(&self, _node: RagNode, state: &mut RagState) -> Transition<RagNode> {
        let next = speculation::join(self, state);
        super::interrupt::gate(self, state, next)
    }

    fn on_limit(&self, state: &mut RagState, limit: Limit) {
        let answer = best_answer_so_far(state);
        if limit == Limit::Deadline && state.continue_on_deadline {
            state.outcome = Some(Outcome::Suspended);
            state.answer = Some(answer);
        } else {
            state.finish(Outcome::BestEffort(BestEffortReason::Limit(limit)), answer);
        }
    }

    /// A speculative passage's grading and answer are moot once routing chose another source.
    fn branch_needed(&self, _node: RagNode, branch: RagNode, state: &RagState) -> bool {
        speculation::needed(branch, state)
    }

    /// A model that stays unavailable after its retries, or whose replies stay unusable (a
    /// decision still malformed after its re-ask), ends the run `best_effort` with
    /// `model_unavailable` when there is something to answer with: the latest answer, else a
    /// quote of the documents found (those its grades set aside too). Without either, or for
    /// any other failure, the run fails (resumable when transient).
    fn on_unavailable(&self, state: &mut RagState, _node: RagNode, error: &RagError) -> bool {
        let material = state.generation.is_some()
            || state.speculation.answer.is_some()
            || !state.documents.is_empty()
            || !state.graded_out.is_empty();
        if !super::answer::unavailable(error) || !material {
            return false;
        }
        if state.documents.is_empty() && state.generation.is_none() {
            // Every passage graded irrelevant by a model that then stayed unavailable: its
            // grades are not trusted more than its other replies, and the passages it set
            // aside are the quote's sources.
            state.documents = std::mem::take(&mut state.graded_out);
        }
        let answer = best_answer_so_far(state);
        state.model_unavailable = true;
        state.finish(
            Outcome::BestEffort(BestEffortReason::ModelUnavailable),
            answer,
        );
        true
    }
}

/// The latest answer if there is one, else an extractive answer from the documents found.
fn best_answer_so_far(state: &RagState) -> String {
    if let Some(generation) = &state.generation {
        return generation.clone();
    }
    if let Some(speculative) = &state.speculation.answer {
        return speculative.answer.clone();
    }
    if state.documents.is_empty() {
        return "No answer could be produced before the workflow was stopped.".to_owned();
    }
    crate::llm::extractive_answer(&state.request.question, &state.documents)
}
