//! The `step` events of a run rebuilt from its checkpoint, for a stream resumed with
//! `Last-Event-ID` (`GET /workflow/runs/{run_id}/events`): each checkpointed step after the
//! client's last one, with the counters as they stood after that step (recomputed from the
//! step records: the counts of rewrites and regenerations are the `transform_query` steps and
//! the `generate` steps that followed a failed groundedness check). Tokens are not replayed:
//! they are live only.

use crate::rag::{Counters, RagNode, RunEvent, RunResponse, Tokens};
use crate::usage::Usage;

/// The `step` events after step number `after`, each with its number (its event id).
pub(crate) fn steps_after(run: &RunResponse, after: u32) -> Vec<(u32, RunEvent)> {
    let mut usage = Usage::default();
    let mut rewrites = 0;
    let mut regenerations = 0;
    let mut previous = None;
    let mut events = Vec::new();
    for (i, record) in run.workflow_steps.iter().enumerate() {
        usage.add(&record.usage);
        match record.name {
            RagNode::TransformQuery => rewrites += 1,
            RagNode::Generate if previous == Some(RagNode::GradeHallucinations) => {
                regenerations += 1
            }
            _ => {}
        }
        previous = Some(record.name);
        let number = i as u32 + 1;
        if number <= after {
            continue;
        }
        events.push((
            number,
            RunEvent::Step {
                name: record.name,
                details: record.details.clone(),
                counters: Counters {
                    steps: number,
                    query_transformation_retry_count: rewrites,
                    hallucination_retry_count: regenerations,
                    model_calls: usage.model_calls,
                    cache_hits: usage.cache_hits,
                    tokens: Tokens::from(&usage),
                },
            },
        ));
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Checkpoint, StepRecord};
    use crate::rag::{RagState, RunRequest};

    #[test]
    fn steps_after_the_last_seen_carry_their_counters() {
        let mut cp: Checkpoint<RagState, RagNode> = Checkpoint::new(
            "r",
            RagNode::RouteQuestion,
            RagState::new(RunRequest::new("q")),
        );
        let used = Usage {
            prompt_tokens: 100,
            completion_tokens: 10,
            model_calls: 1,
            ..Usage::default()
        };
        for node in [
            RagNode::RouteQuestion,
            RagNode::KgRetrieval,
            RagNode::Generate,
            RagNode::GradeHallucinations,
            RagNode::Generate,
            RagNode::TransformQuery,
        ] {
            let usage = if node == RagNode::KgRetrieval {
                Usage::default()
            } else {
                used
            };
            cp.records
                .push(StepRecord::new(node, 0, 0.1, serde_json::json!({}), usage));
        }
        cp.steps = 6;
        let run = RunResponse::from_checkpoint(&cp, "test");
        assert_eq!(steps_after(&run, 6), []);
        let events = steps_after(&run, 3);
        let numbers: Vec<u32> = events.iter().map(|(n, _)| *n).collect();
        assert_eq!(numbers, [4, 5, 6]);
        let RunEvent::Step { name, counters, .. } = &events[1].1 else {
            panic!("a step event");
        };
        assert_eq!(*name, RagNode::Generate);
        assert_eq!(counters.steps, 5);
        assert_eq!(counters.hallucination_retry_count, 1);
        assert_eq!(counters.query_transformation_retry_count, 0);
        assert_eq!((counters.model_calls, counters.tokens.total), (4, 440));
        let RunEvent::Step { counters, .. } = &events[2].1 else {
            panic!("a step event");
        };
        assert_eq!(counters.query_transformation_retry_count, 1);
    }
}
