//! The model's window: how many tokens its context holds (`LLM_CONTEXT_TOKENS`), how many the
//! answer may use (`LLM_MAX_ANSWER_TOKENS`) and how many a reasoning model may think on top of
//! every call's own cap (`LLM_REASONING_TOKENS`). [`ModelWindow::output_cap`] is the one place a
//! call's output cap is computed; every prompt is budgeted to fit the context together with it.

use super::{ConfigError, Env, Num};

/// Fits the common hosted models (all of them hold at least 32k tokens); small local models
/// need their own value (llama.cpp's default slot is 4096 tokens, often set to 2048).
const CONTEXT_TOKENS: Num = Num::new(1_024, 10_000_000, 32_768, "tokens");
const MAX_ANSWER_TOKENS: Num = Num::new(16, 100_000, 1_024, "tokens");
/// No allowance by default: a model that does not think needs none.
const REASONING_TOKENS: Num = Num::new(0, 200_000, 0, "tokens (0 = no allowance)");

/// The context window and the answer's share of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ModelWindow {
    /// `LLM_CONTEXT_TOKENS`: the model's context window, prompt and reply together
    /// (1024..=10000000, default 32768).
    pub context_tokens: u32,
    /// `LLM_MAX_ANSWER_TOKENS`: the answer's output cap (16..=100000, default 1024; at most
    /// half the context, so the prompt keeps room).
    pub max_answer_tokens: u32,
    /// `LLM_REASONING_TOKENS`: what a reasoning model may spend thinking, added to every call's
    /// cap, decisions and answer alike (0..=200000, default 0; the answer's cap with it at most
    /// half the context). On Bedrock it is also Claude's thinking budget.
    pub reasoning_tokens: u32,
}

impl ModelWindow {
    /// The output cap of one call: `decision_cap` (a decision's own small cap), else the
    /// answer's, plus the reasoning allowance, so a reply still fits after the model thought.
    pub(crate) fn output_cap(&self, decision_cap: Option<u32>) -> u32 {
        decision_cap
            .unwrap_or(self.max_answer_tokens)
            .saturating_add(self.reasoning_tokens)
    }
}

impl Default for ModelWindow {
    fn default() -> Self {
        model_window(&Env(&|_| None)).expect("the defaults are valid")
    }
}

pub(super) fn model_window(env: &Env) -> Result<ModelWindow, ConfigError> {
    let context_tokens = env.count("LLM_CONTEXT_TOKENS", CONTEXT_TOKENS)?;
    let max_answer_tokens = env.count("LLM_MAX_ANSWER_TOKENS", MAX_ANSWER_TOKENS)?;
    let reasoning_tokens = env.count("LLM_REASONING_TOKENS", REASONING_TOKENS)?;
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
    if max_answer_tokens + reasoning_tokens > context_tokens / 2 {
        return Err(ConfigError::Invalid {
            var: "LLM_REASONING_TOKENS",
            value: reasoning_tokens.to_string(),
            expected: format!(
                "at most half of LLM_CONTEXT_TOKENS ({context_tokens}) less \
                 LLM_MAX_ANSWER_TOKENS ({max_answer_tokens}), so the answer's cap with the \
                 allowance leaves the prompt room: lower it, or raise LLM_CONTEXT_TOKENS"
            ),
        });
    }
    Ok(ModelWindow {
        context_tokens,
        max_answer_tokens,
        reasoning_tokens,
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

    #[test]
    fn the_reasoning_allowance_is_added_to_every_cap_and_must_leave_the_prompt_room() {
        let d = ModelWindow::default();
        assert_eq!(d.reasoning_tokens, 0);
        assert_eq!((d.output_cap(Some(32)), d.output_cap(None)), (32, 1_024));
        let thinking = read(&[("LLM_REASONING_TOKENS", "2048")]).unwrap();
        assert_eq!(thinking.output_cap(Some(32)), 2_080);
        assert_eq!(thinking.output_cap(None), 3_072);
        let error = read(&[
            ("LLM_CONTEXT_TOKENS", "8192"),
            ("LLM_REASONING_TOKENS", "3073"),
        ])
        .unwrap_err();
        assert_eq!(error.var(), "LLM_REASONING_TOKENS");
        assert!(error.to_string().contains("(1024)"), "{error}");
        assert!(read(&[
            ("LLM_CONTEXT_TOKENS", "8192"),
            ("LLM_REASONING_TOKENS", "3072"),
        ])
        .is_ok());
        let error = read(&[("LLM_REASONING_TOKENS", "-1")]).unwrap_err();
        assert_eq!(error.var(), "LLM_REASONING_TOKENS");
    }
}
