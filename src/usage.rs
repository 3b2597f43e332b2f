//! Model usage, metered like time: tokens and calls of a step, summed over a run (across
//! resumes), and the token budget a node must fit in before it starts.

use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// Tokens and model calls spent by a step or a whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt (input) tokens.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion (output) tokens, reasoning included.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Of the completion tokens, those a reasoning model spent thinking, as the provider
    /// reported them apart (or estimated with the rest); shown as `tokens.reasoning` when any.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// True when any part was estimated because a provider reported no `usage`.
    #[serde(default)]
    pub estimated: bool,
    /// Model replies received (re-asks included; cache hits and failed attempts excluded).
    #[serde(default)]
    pub model_calls: u32,
    /// Replies served from the response cache (no model call, no tokens).
    #[serde(default)]
    pub cache_hits: u32,
}

impl Usage {
    /// Prompt plus completion tokens.
    pub(crate) fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    /// True when nothing was used (no call, no cache hit).
    pub(crate) fn is_empty(&self) -> bool {
        self.model_calls == 0 && self.cache_hits == 0 && self.total() == 0
    }

    /// Adds `other` to this usage.
    pub(crate) fn add(&mut self, other: &Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.estimated |= other.estimated;
        self.model_calls += other.model_calls;
        self.cache_hits += other.cache_hits;
    }

    /// Adds this usage to a step's details: `tokens`, `model_calls`, and `cache_hits` when
    /// there were any.
    pub(crate) fn insert_into(&self, details: &mut serde_json::Map<String, serde_json::Value>) {
        details.insert("tokens".into(), self.tokens_json());
        details.insert("model_calls".into(), self.model_calls.into());
        if self.cache_hits > 0 {
            details.insert("cache_hits".into(), self.cache_hits.into());
        }
    }

    /// The usage a step's details show ([`Usage::insert_into`]); empty when they show none.
    pub(crate) fn from_details(details: &serde_json::Value) -> Self {
        let tokens = &details["tokens"];
        let count = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
        Self {
            prompt_tokens: count(&tokens["prompt"]),
            completion_tokens: count(&tokens["completion"]),
            reasoning_tokens: count(&tokens["reasoning"]),
            estimated: tokens["estimated"].as_bool().unwrap_or(false),
            model_calls: u32::try_from(count(&details["model_calls"])).unwrap_or(u32::MAX),
            cache_hits: u32::try_from(count(&details["cache_hits"])).unwrap_or(u32::MAX),
        }
    }

    /// The JSON object shown in step details and response metadata:
    /// `{"prompt", "completion", "total", "estimated"}`, and `reasoning` (part of `completion`)
    /// when a model thought.
    pub(crate) fn tokens_json(&self) -> serde_json::Value {
        let mut tokens = serde_json::json!({
            "prompt": self.prompt_tokens,
            "completion": self.completion_tokens,
            "total": self.total(),
            "estimated": self.estimated,
        });
        if self.reasoning_tokens > 0 {
            tokens["reasoning"] = self.reasoning_tokens.into();
        }
        tokens
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A provider-neutral token estimate of one text sent to a model (a chat message or an
/// embedding input), for providers that report no usage and for the token budget: one token
/// per four characters (rounded up), plus four for the message framing; the usual rule of
/// thumb for English text with BPE tokenizers.
pub(crate) fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4) + 4
}

/// Collects the usage of one step; concurrent calls inside the step add to it.
#[derive(Debug, Default)]
pub struct Meter(Mutex<Usage>);

impl Meter {
    /// Adds one call's usage.
    pub(crate) fn charge(&self, usage: &Usage) {
        if let Ok(mut total) = self.0.lock() {
            total.add(usage);
        }
    }

    /// What was charged so far.
    pub fn usage(&self) -> Usage {
        self.0.lock().map(|u| *u).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_adds_up_and_keeps_the_estimated_mark() {
        let meter = Meter::default();
        meter.charge(&Usage {
            prompt_tokens: 100,
            completion_tokens: 5,
            model_calls: 1,
            ..Usage::default()
        });
        meter.charge(&Usage {
            prompt_tokens: 40,
            completion_tokens: 2,
            estimated: true,
            model_calls: 1,
            ..Usage::default()
        });
        meter.charge(&Usage {
            cache_hits: 1,
            ..Usage::default()
        });
        let u = meter.usage();
        assert_eq!((u.total(), u.model_calls, u.cache_hits), (147, 2, 1));
        assert!(u.estimated);
        assert_eq!(u.tokens_json()["total"], 147);
        assert!(Usage::default().is_empty());
    }

    #[test]
    fn reasoning_tokens_add_up_and_show_only_when_a_model_thought() {
        let mut u = Usage {
            completion_tokens: 50,
            reasoning_tokens: 40,
            model_calls: 1,
            ..Usage::default()
        };
        u.add(&u.clone());
        assert_eq!(
            (u.completion_tokens, u.reasoning_tokens, u.total()),
            (100, 80, 100)
        );
        let mut details = serde_json::Map::new();
        u.insert_into(&mut details);
        let details = serde_json::Value::Object(details);
        assert_eq!(details["tokens"]["reasoning"], 80);
        assert_eq!(Usage::from_details(&details), u);
        assert!(Usage::default().tokens_json().get("reasoning").is_none());
        let saved = serde_json::to_value(Usage::default()).unwrap();
        assert!(saved.get("reasoning_tokens").is_none(), "{saved}");
    }

    #[test]
    fn old_checkpoints_without_usage_fields_still_load() {
        let u: Usage = serde_json::from_str("{}").unwrap();
        assert_eq!(u, Usage::default());
    }
}
