//! The model's window: how many tokens its context holds (`LLM_CONTEXT_TOKENS`) and how many
//! the answer may use (`LLM_MAX_ANSWER_TOKENS`). Every prompt is budgeted to fit the context
//! together with its call's output cap.

use super::{ConfigError, Env, Num};

/// Fits the common hosted models (all of them hold at least 32k tokens); small local models
/// need their own value (llama.cpp's default slot is 4096 tokens, often set to 2048).
const CONTEXT_TOKENS: Num = Num::new(1_024, 10_000_000, 32_768, "tokens");
const MAX_ANSWER_TOKENS: Num = Num::new(16, 100_000, 1_024, "tokens");

/// The context window and the answer's share of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ModelWindow {
    /// `LLM_CONTEXT_TOKENS`: the model's context window, prompt and reply together
    /// (1024..=10000000, default 32768).
    pub context_tokens: u32,
    /// `LLM_MAX_ANSWER_TOKENS`: the answer's output cap (16..=100000, default 1024; at most
    /// half the context, so the prompt keeps room).
    pub max_answer_tokens: u32,
}

impl Default for ModelWindow {
    fn default() -> Self {
        model_window(&Env(&|_| None)).expect("the defaults are valid")
    }
}

pub(super) fn model_window(env: &Env) -> Result<ModelWindow, ConfigError> {
    let context_tokens = env.count("LLM_CONTEXT_TOKENS", CONTEXT_TOKENS)?;
    let max_answer_tokens = env.count("LLM_MAX_ANSWER_TOKENS", MAX_ANSWER_TOKENS)?;
    if max_answer_tokens > context_tokens / 2 {
        return Err(ConfigError::Invalid {
            var: "LLM_MAX_ANSWER_TOKENS",
            value: max_answer_tokens.to_string(),
            expected: format!(
                "at most half of LLM_CONTEXT_TOKENS ({context_tokens}), so the prompt has room: \
                 lower it, or raise LLM_CONTEXT_TOKENS to the model's real context window"
            ),
        });
    }
    Ok(ModelWindow {
        context_tokens,
        max_answer_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &'static [(&'static str, &'static str)]) -> Result<ModelWindow, ConfigError> {
        model_window(&Env(&|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }))
    }

    #[test]
    fn defaults_fit_hosted_models_and_small_windows_are_checked() {
        let d = ModelWindow::default();
        assert_eq!((d.context_tokens, d.max_answer_tokens), (32_768, 1_024));
        let small = read(&[("LLM_CONTEXT_TOKENS", "2048")]).unwrap();
        assert_eq!(
            (small.context_tokens, small.max_answer_tokens),
            (2_048, 1_024)
        );
        let error = read(&[("LLM_CONTEXT_TOKENS", "1024")]).unwrap_err();
        assert!(
            error.to_string().contains("LLM_MAX_ANSWER_TOKENS"),
            "{error}"
        );
        let error = read(&[("LLM_CONTEXT_TOKENS", "big")]).unwrap_err();
        assert!(error.to_string().contains("LLM_CONTEXT_TOKENS"), "{error}");
    }
}
