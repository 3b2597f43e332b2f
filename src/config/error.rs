//! The error of a bad setting: it names the variable, the value (never for secrets) and what
//! is accepted.

/// A variable with a bad value. Messages name the variable and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Not a whole number.
    #[error("{var}={value:?} is not a whole number; expected {expected}")]
    NotANumber {
        /// Variable name.
        var: &'static str,
        /// The value as given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// A number outside the accepted range.
    #[error("{var}={value} is out of range; expected {expected}")]
    OutOfRange {
        /// Variable name.
        var: &'static str,
        /// The value as given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// Any other malformed value.
    #[error("{var}={value:?} is invalid; expected {expected}")]
    Invalid {
        /// Variable name.
        var: &'static str,
        /// The value as given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// A malformed value that must not be printed (a key, or a URL carrying credentials).
    #[error("{var} is invalid (value not shown); expected {expected}")]
    InvalidSecret {
        /// Variable name.
        var: &'static str,
        /// What is accepted.
        expected: String,
    },
    /// The process environment holds bytes that are not UTF-8 (value not shown).
    #[error("{var} is not valid UTF-8")]
    NotUnicode {
        /// Variable name.
        var: String,
    },
    /// `openai` against OpenAI itself without any way to get a key.
    #[error(
        "LLM_PROVIDER=openai with LLM_BASE_URL={base_url} needs an API key; expected LLM_API_KEY \
         or SECRETS_ID to be set (or LLM_PROVIDER=offline, or LLM_BASE_URL of a server that \
         needs no key)"
    )]
    MissingApiKey {
        /// The OpenAI base URL in use.
        base_url: String,
    },
}

impl ConfigError {
    /// The variable at fault.
    pub fn var(&self) -> &str {
        match self {
            ConfigError::NotANumber { var, .. }
            | ConfigError::OutOfRange { var, .. }
            | ConfigError::Invalid { var, .. }
            | ConfigError::InvalidSecret { var, .. } => var,
            ConfigError::NotUnicode { var } => var,
            ConfigError::MissingApiKey { .. } => "LLM_API_KEY",
        }
    }
}
