//! Step records: what the caller sees in `workflow_steps`.

use crate::clock::rfc3339;
use crate::usage::Usage;
use serde::{Deserialize, Serialize};

/// One executed step of a node `N`, serialised with the node's name.
///
/// Its model usage is kept typed in `usage` and shown in `details` (`tokens`, `model_calls`,
/// `cache_hits`); only `details` is serialised, and `usage` is read back from it, so stored
/// checkpoints and `workflow_steps` keep one shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "StoredRecord<N>")]
pub struct StepRecord<N> {
    /// The node that ran.
    pub name: N,
    /// When the step started (RFC 3339, UTC).
    pub timestamp: String,
    /// Seconds the step took, retries and backoff included.
    pub processing_time: f64,
    /// Node-specific facts (decision, counters, documents found), with the step's usage.
    pub details: serde_json::Value,
    /// Tokens and model calls of the step (empty when it used no model).
    #[serde(skip)]
    pub usage: Usage,
}

impl<N> StepRecord<N> {
    /// The record of a step of `name` that started at `started_micros`, took
    /// `processing_time` seconds and used `usage`, which is added to `details` (an object)
    /// when the step used a model at all.
    pub(crate) fn new(
        name: N,
        started_micros: u64,
        processing_time: f64,
        mut details: serde_json::Value,
        usage: Usage,
    ) -> Self {
        if !usage.is_empty() {
            if let Some(map) = details.as_object_mut() {
                usage.insert_into(map);
            }
        }
        Self {
            name,
            timestamp: rfc3339(started_micros),
            processing_time,
            details,
            usage,
        }
    }
}

/// A step record as stored: its usage only inside `details`.
#[derive(Deserialize)]
struct StoredRecord<N> {
    name: N,
    timestamp: String,
    processing_time: f64,
    details: serde_json::Value,
}

impl<N> From<StoredRecord<N>> for StepRecord<N> {
    fn from(stored: StoredRecord<N>) -> Self {
        Self {
            usage: Usage::from_details(&stored.details),
            name: stored.name,
            timestamp: stored.timestamp,
            processing_time: stored.processing_time,
            details: stored.details,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_shown_in_details_and_read_back_from_them() {
        let usage = Usage {
            prompt_tokens: 90,
            completion_tokens: 10,
            estimated: true,
            model_calls: 2,
            cache_hits: 1,
            ..Usage::default()
        };
        let record = StepRecord::new(
            "generate".to_owned(),
            0,
            0.5,
            serde_json::json!({"a": 1}),
            usage,
        );
        let stored = serde_json::to_value(&record).unwrap();
        assert_eq!(
            stored["details"],
            serde_json::json!({
                "a": 1,
                "tokens": {"prompt": 90, "completion": 10, "total": 100, "estimated": true},
                "model_calls": 2,
                "cache_hits": 1,
            })
        );
        assert!(stored.get("usage").is_none());
        let back: StepRecord<String> = serde_json::from_value(stored).unwrap();
        assert_eq!(back, record);

        let quiet = StepRecord::new(
            "kg_retrieval",
            0,
            0.1,
            serde_json::json!({}),
            Usage::default(),
        );
        assert_eq!(quiet.details, serde_json::json!({}));
        let back: StepRecord<String> =
            serde_json::from_value(serde_json::to_value(&quiet).unwrap()).unwrap();
        assert_eq!(back.usage, Usage::default());
    }
}
