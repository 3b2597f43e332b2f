//! The conversation-thread variables: how many earlier turns a follow-up sees
//! (`THREAD_HISTORY_TURNS`, `THREAD_HISTORY_TOKENS`) and how long an idle thread is kept
//! (`THREAD_TTL_SECONDS`).

use super::env::{Env, Num};
use super::error::ConfigError;
use std::time::Duration;

const HISTORY_TURNS: Num = Num::new(1, 50, 6, "turns");
const HISTORY_TOKENS: Num = Num::new(100, 100_000, 2_000, "tokens (estimated)");
const TTL: Num = Num::new(60, 31_536_000, 2_592_000, "seconds");

/// How threads keep their history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadSettings {
    /// `THREAD_HISTORY_TURNS`: recent turns a thread keeps for prompts (1..=50, default 6).
    pub history_turns: u32,
    /// `THREAD_HISTORY_TOKENS`: most (estimated) tokens of those turns put into prompts
    /// (100..=100000, default 2000).
    pub history_tokens: u32,
    /// `THREAD_TTL_SECONDS`: a thread expires this long after its last turn (60..=31536000 s,
    /// default 30 days).
    pub ttl: Duration,
}

impl Default for ThreadSettings {
    fn default() -> Self {
        threads(&Env(&|_| None)).expect("the defaults are valid")
    }
}

pub(super) fn threads(env: &Env) -> Result<ThreadSettings, ConfigError> {
    Ok(ThreadSettings {
        history_turns: env.count("THREAD_HISTORY_TURNS", HISTORY_TURNS)?,
        history_tokens: env.count("THREAD_HISTORY_TOKENS", HISTORY_TOKENS)?,
        ttl: env.seconds("THREAD_TTL_SECONDS", TTL)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_ranges() {
        let d = ThreadSettings::default();
        assert_eq!((d.history_turns, d.history_tokens), (6, 2_000));
        assert_eq!(d.ttl, Duration::from_secs(30 * 86_400));
        let bad = |var: &str, value: &str| {
            let (var, value) = (var.to_owned(), value.to_owned());
            threads(&Env(&move |name| (name == var).then(|| value.clone()))).unwrap_err()
        };
        assert!(bad("THREAD_HISTORY_TURNS", "0")
            .to_string()
            .contains("THREAD_HISTORY_TURNS"));
        assert!(bad("THREAD_TTL_SECONDS", "x")
            .to_string()
            .contains("THREAD_TTL_SECONDS"));
    }
}
