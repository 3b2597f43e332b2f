//! A person in the loop: `CLARIFY` (a run asks back when its question refers to something
//! nothing names), `APPROVE_STEPS` (the steps that wait for a person's consent before they
//! run) and `INTERRUPT_TIMEOUT_SECONDS` (how long a run waits for either).

use super::env::{Env, Num};
use super::error::ConfigError;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A step that can be made to wait for a person's consent (`APPROVE_STEPS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gated {
    /// `web_search`: the question leaves the deployment for a web search provider.
    WebSearch,
}

impl Gated {
    /// Every gated step, by wire name.
    const ALL: [Gated; 1] = [Gated::WebSearch];

    /// Wire name (the step's own name).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Gated::WebSearch => "web_search",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|g| g.as_str() == name)
    }
}

/// The default of `INTERRUPT_TIMEOUT_SECONDS`: a day.
pub const DEFAULT_INTERRUPT_TIMEOUT: Duration = Duration::from_secs(86_400);
/// `INTERRUPT_TIMEOUT_SECONDS`: a minute to 30 days (a run's checkpoint outlives its wait by
/// `RUN_TTL_SECONDS`, which the limit does not check).
const INTERRUPT_TIMEOUT: Num = Num::new(
    60,
    2_592_000,
    DEFAULT_INTERRUPT_TIMEOUT.as_secs(),
    "seconds",
);

/// When a run stops to wait for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interrupts {
    /// Ask back when the question refers to something no earlier turn names (`CLARIFY`).
    pub clarify: bool,
    /// The steps that wait for a person's consent (`APPROVE_STEPS`).
    pub approve: Vec<Gated>,
    /// How long a run waits before it ends `best_effort` with `interrupt_timeout`.
    pub timeout: Duration,
}

impl Interrupts {
    /// No interrupts: the run never waits (a graph built by hand, and the tests that do not
    /// ask for them).
    pub const OFF: Interrupts = Interrupts {
        clarify: false,
        approve: Vec::new(),
        timeout: DEFAULT_INTERRUPT_TIMEOUT,
    };

    /// True when `step` waits for consent.
    pub(crate) fn gates(&self, step: Gated) -> bool {
        self.approve.contains(&step)
    }
}

/// Reads `CLARIFY` (`on`, the default, or `off`), `APPROVE_STEPS` (comma-separated step
/// names; only `web_search` can be gated; unset or empty: none) and
/// `INTERRUPT_TIMEOUT_SECONDS`.
pub(super) fn from_env(env: &Env<'_>) -> Result<Interrupts, ConfigError> {
    let clarify = env.checked("CLARIFY", "on or off", |v| v == "on" || v == "off")?;
    let expected = "a comma-separated list of steps that can wait for approval: web_search";
    let steps = env.checked("APPROVE_STEPS", expected, |v| {
        v.split(',')
            .map(str::trim)
            .all(|name| name.is_empty() || Gated::parse(name).is_some())
    })?;
    let mut approve: Vec<Gated> = steps
        .iter()
        .flat_map(|v| v.split(','))
        .filter_map(|name| Gated::parse(name.trim()))
        .collect();
    approve.dedup();
    Ok(Interrupts {
        clarify: clarify.as_deref() != Some("off"),
        approve,
        timeout: env.seconds("INTERRUPT_TIMEOUT_SECONDS", INTERRUPT_TIMEOUT)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<Interrupts, ConfigError> {
        let lookup = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        };
        from_env(&Env(&lookup))
    }

    #[test]
    fn clarify_is_on_and_nothing_is_gated_by_default() {
        let read = read(&[]).unwrap();
        assert!(read.clarify);
        assert!(read.approve.is_empty());
        assert_eq!(read.timeout, DEFAULT_INTERRUPT_TIMEOUT);
    }

    #[test]
    fn settings_are_read_and_bad_values_name_their_variable() {
        let on = read(&[
            ("CLARIFY", "off"),
            ("APPROVE_STEPS", " web_search ,"),
            ("INTERRUPT_TIMEOUT_SECONDS", "600"),
        ])
        .unwrap();
        assert!(!on.clarify);
        assert_eq!(on.approve, vec![Gated::WebSearch]);
        assert!(on.gates(Gated::WebSearch));
        assert_eq!(on.timeout, Duration::from_secs(600));
        for (var, value) in [
            ("CLARIFY", "yes"),
            ("APPROVE_STEPS", "generate"),
            ("INTERRUPT_TIMEOUT_SECONDS", "5"),
        ] {
            let error = read(&[(var, value)]).unwrap_err();
            assert_eq!(error.var(), var, "{error}");
        }
    }
}
