//! What a run tells a watching caller while it runs: a `step` after each checkpointed step,
//! `token`s of the answer as it is generated, and `discarded` when an answer attempt is
//! rejected. Sending never blocks and never fails the run: a caller who went away only stops
//! receiving.

use super::{RagCheckpoint, RagNode, Tokens};
use serde::Serialize;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// Counters after a step, as in the response metadata.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Counters {
    /// Steps so far, across every invocation.
    pub steps: u32,
    /// Query rewrites.
    pub query_transformation_retry_count: u32,
    /// Regenerations of ungrounded answers.
    pub hallucination_retry_count: u32,
    /// Model replies received.
    pub model_calls: u32,
    /// Replies served from the response cache.
    pub cache_hits: u32,
    /// Tokens used so far.
    pub tokens: Tokens,
}

/// One event of a running run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", content = "data", rename_all = "snake_case")]
pub(crate) enum RunEvent {
    /// A step finished and was checkpointed.
    Step {
        /// The node that ran (serialised as its name).
        name: RagNode,
        /// The step record's details.
        details: serde_json::Value,
        /// Counters after the step.
        counters: Counters,
    },
    /// A piece of the answer being generated.
    Token {
        /// Generation attempt, from 1; a later attempt replaces an earlier one.
        attempt: u32,
        /// Text to append.
        text: String,
    },
    /// The answer of this attempt was rejected (not grounded, or not useful and rewritten,
    /// or its stream broke and is retried): clear it.
    Discarded {
        /// The rejected attempt.
        attempt: u32,
    },
}

impl RunEvent {
    /// The event name (`step`, `token`, `discarded`).
    pub(crate) fn name(&self) -> &'static str {
        match self {
            RunEvent::Step { .. } => "step",
            RunEvent::Token { .. } => "token",
            RunEvent::Discarded { .. } => "discarded",
        }
    }

    /// The event's data, without the name.
    pub(crate) fn data(&self) -> serde_json::Value {
        let mut tagged = serde_json::to_value(self).unwrap_or_default();
        tagged
            .get_mut("data")
            .map(serde_json::Value::take)
            .unwrap_or_default()
    }

    /// The `step` event of the checkpoint's record `index` (0-based), numbered `index + 1`:
    /// its place among the run's records, as a replay numbers it.
    pub(crate) fn step_at(cp: &RagCheckpoint, index: usize) -> Option<Self> {
        let record = cp.records.get(index)?;
        Some(RunEvent::Step {
            name: record.name,
            details: record.details.clone(),
            counters: Counters {
                steps: u32::try_from(index + 1).unwrap_or(u32::MAX),
                query_transformation_retry_count: cp.state.query_transformation_retry_count,
                hallucination_retry_count: cp.state.hallucination_retry_count,
                model_calls: cp.usage.model_calls,
                cache_hits: cp.usage.cache_hits,
                tokens: Tokens::from(&cp.usage),
            },
        })
    }
}

/// Where a run's events go: nowhere (the default), or a channel a caller reads.
#[derive(Debug, Clone, Default)]
pub(crate) struct Events(Option<UnboundedSender<RunEvent>>);

impl Events {
    /// A sender and the receiver the caller reads events from.
    pub(crate) fn channel() -> (Self, UnboundedReceiver<RunEvent>) {
        let (tx, rx) = unbounded_channel();
        (Self(Some(tx)), rx)
    }

    /// True when someone may be listening (answers are then streamed from the model).
    pub(crate) fn is_on(&self) -> bool {
        self.0.as_ref().is_some_and(|tx| !tx.is_closed())
    }

    /// Sends an event; a receiver that went away is ignored (the run goes on).
    pub(crate) fn emit(&self, event: RunEvent) {
        if let Some(tx) = &self.0 {
            let _ = tx.send(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialize_with_their_name_and_data() {
        let e = RunEvent::Token {
            attempt: 2,
            text: "Hi".into(),
        };
        assert_eq!(e.name(), "token");
        assert_eq!(e.data(), serde_json::json!({"attempt": 2, "text": "Hi"}));
        assert_eq!(
            RunEvent::Discarded { attempt: 1 }.data(),
            serde_json::json!({"attempt": 1})
        );
    }

    #[test]
    fn a_receiver_that_went_away_does_not_fail_the_sender() {
        let (events, rx) = Events::channel();
        assert!(events.is_on());
        drop(rx);
        assert!(!events.is_on());
        events.emit(RunEvent::Discarded { attempt: 1 });
        assert!(!Events::default().is_on());
    }
}
