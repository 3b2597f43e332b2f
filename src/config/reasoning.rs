//! `LLM_REASONING_EFFORT`: how hard a reasoning model is asked to think. (Its token allowance,
//! `LLM_REASONING_TOKENS`, is part of the model's window: see `config/model_window.rs`.)

use super::env::Env;
use super::error::ConfigError;
use std::fmt;

/// How hard a reasoning model thinks before it answers (`LLM_REASONING_EFFORT`): sent as
/// OpenAI's `reasoning_effort`; on Bedrock, any effort but `none` turns on Claude's extended
/// thinking with `LLM_REASONING_TOKENS` as its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningEffort {
    /// No reasoning (models that can skip it, such as GPT-5.1).
    None,
    /// As little as the model allows (GPT-5).
    Minimal,
    /// Little.
    Low,
    /// The models' usual default.
    Medium,
    /// Much.
    High,
}

impl ReasoningEffort {
    const ALL: [ReasoningEffort; 5] = [
        ReasoningEffort::None,
        ReasoningEffort::Minimal,
        ReasoningEffort::Low,
        ReasoningEffort::Medium,
        ReasoningEffort::High,
    ];

    /// The value as written in `LLM_REASONING_EFFORT` and sent as `reasoning_effort`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::None => "none",
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }
}

impl fmt::Display for ReasoningEffort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `LLM_REASONING_EFFORT`: one of `none`, `minimal`, `low`, `medium`, `high` (any case);
/// unset sends none.
pub(super) fn reasoning_effort(env: &Env<'_>) -> Result<Option<ReasoningEffort>, ConfigError> {
    let Some(value) = env.text("LLM_REASONING_EFFORT") else {
        return Ok(None);
    };
    match ReasoningEffort::ALL
        .into_iter()
        .find(|effort| value.eq_ignore_ascii_case(effort.as_str()))
    {
        Some(effort) => Ok(Some(effort)),
        None => Err(ConfigError::Invalid {
            var: "LLM_REASONING_EFFORT",
            value,
            expected: "one of: none, minimal, low, medium, high (unset sends none)".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(value: &'static str) -> Result<Option<ReasoningEffort>, ConfigError> {
        reasoning_effort(&Env(&|name| {
            (name == "LLM_REASONING_EFFORT").then(|| value.to_owned())
        }))
    }

    #[test]
    fn every_effort_is_read_in_any_case_and_others_are_refused() {
        assert_eq!(read(""), Ok(None));
        assert_eq!(read(" High "), Ok(Some(ReasoningEffort::High)));
        for effort in ReasoningEffort::ALL {
            assert_eq!(read(effort.as_str()), Ok(Some(effort)));
        }
        let error = read("extreme").unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("LLM_REASONING_EFFORT") && text.contains("extreme"),
            "{text}"
        );
        assert!(text.contains("none, minimal, low, medium, high"), "{text}");
    }
}
