//! A run forked from a step of another: the state that step left, made into a new run's. What
//! the steps up to it decided stays (route, documents, counters); what only ended the old run
//! goes (its outcome and answer); with a new question, what was found for the old one goes
//! too and the run searches again.

use super::state::ForkedFrom;
use super::{Mode, RagNode, RagState, ValidationError};
use crate::llm::DataSource;

/// What a fork changes in the request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForkChanges {
    /// A new question: searched for again from the route the step had chosen.
    pub question: Option<String>,
    /// Another mode (which checks run).
    pub mode: Option<Mode>,
}

impl ForkChanges {
    /// Refuses a question a run request would refuse (empty, too long).
    pub(crate) fn validate(&self, state: &RagState) -> Result<(), ValidationError> {
        if let Some(question) = &self.question {
            let mut request = state.request.clone();
            request.question.clone_from(question);
            request.validate()?;
        }
        Ok(())
    }
}

/// Makes the state a step left (`state`, with the run going on at `next`) the first state of
/// a fork; returns the node the fork goes on at.
pub(crate) fn fork_state(
    state: &mut RagState,
    next: RagNode,
    from: ForkedFrom,
    changes: ForkChanges,
    now_ms: u64,
) -> RagNode {
    state.forked_from = Some(from);
    state.created_at_ms = now_ms;
    state.outcome = None;
    state.answer = None;
    // Not a turn of the thread: the turn is the original run's. A follow-up's standalone
    // rewrite, once made, is the question the fork answers.
    if let Some(thread) = state.thread.take() {
        if let Some(standalone) = thread.standalone_question {
            state.request.question = standalone;
        }
    }
    if let Some(mode) = changes.mode {
        state.request.mode = mode;
    }
    let Some(question) = changes.question else {
        return next;
    };
    state.request.question.clone_from(&question);
    state.query = question;
    state.documents.clear();
    state.graded_out.clear();
    state.generation = None;
    state.answer_check = None;
    state.answer_cut = false;
    state.model_unavailable = false;
    state.model_unusable = false;
    match state.route {
        // Not routed yet: the fork routes the new question itself.
        None => next,
        Some(DataSource::KgRetrieval) => RagNode::KgRetrieval,
        Some(DataSource::WebSearch) => RagNode::WebSearch,
        Some(DataSource::LlmInternal) => RagNode::Generate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::{DocKind, Document};
    use crate::rag::RunRequest;

    fn graded() -> RagState {
        let mut state = RagState::new(RunRequest::new("What kills durian trees?"));
        state.route = Some(DataSource::KgRetrieval);
        state.documents = vec![Document {
            id: "1".into(),
            title: "Patch canker".into(),
            url: "kb://canker.md".into(),
            content: "Patch canker kills durian trees.".into(),
            score: 1.0,
            kind: DocKind::Episode,
            clear_match: false,
            from_graph: false,
            vector_rank: None,
        }];
        state.generation = Some("Patch canker [1].".into());
        state.answer = Some("old".into());
        state.query_transformation_retry_count = 1;
        state
    }

    fn from() -> ForkedFrom {
        ForkedFrom {
            run_id: "r1".into(),
            step: 3,
        }
    }

    #[test]
    fn the_same_question_keeps_what_the_steps_found_and_goes_on_where_the_run_did() {
        let mut state = graded();
        let next = fork_state(
            &mut state,
            RagNode::Generate,
            from(),
            ForkChanges::default(),
            7,
        );
        assert_eq!(next, RagNode::Generate);
        assert_eq!(state.documents.len(), 1);
        assert_eq!(state.generation.as_deref(), Some("Patch canker [1]."));
        assert_eq!((state.answer.clone(), state.outcome), (None, None));
        assert_eq!(state.query_transformation_retry_count, 1);
        assert_eq!((state.forked_from, state.created_at_ms), (Some(from()), 7));
    }

    #[test]
    fn a_new_question_searches_again_from_the_route_chosen() {
        let mut state = graded();
        let changes = ForkChanges {
            question: Some("Which pests bore into branches?".into()),
            mode: Some(Mode::Speed),
        };
        let next = fork_state(&mut state, RagNode::Generate, from(), changes, 7);
        assert_eq!(next, RagNode::KgRetrieval);
        assert!(state.documents.is_empty() && state.generation.is_none());
        assert_eq!(state.query, "Which pests bore into branches?");
        assert_eq!(state.request.question, state.query);
        assert_eq!(state.request.mode, Mode::Speed);
        let mut unrouted = RagState::new(RunRequest::new("q"));
        let changes = ForkChanges {
            question: Some("another".into()),
            mode: None,
        };
        let next = fork_state(&mut unrouted, RagNode::RouteQuestion, from(), changes, 7);
        assert_eq!(next, RagNode::RouteQuestion);
    }

    #[test]
    fn an_empty_or_overlong_question_is_refused_like_a_run_request() {
        let state = graded();
        let empty = ForkChanges {
            question: Some("  ".into()),
            mode: None,
        };
        assert_eq!(empty.validate(&state).unwrap_err().field, "question");
        let long = ForkChanges {
            question: Some("x".repeat(5000)),
            mode: None,
        };
        assert_eq!(long.validate(&state).unwrap_err().field, "question");
        assert!(ForkChanges::default().validate(&state).is_ok());
    }
}
