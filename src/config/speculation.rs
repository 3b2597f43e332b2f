//! `SPECULATION`: whether a knowledge-base question starts routing, grading and a first
//! answer at once (see `rag::speculation`), and the request field that turns it off.

use super::env::Env;
use super::error::ConfigError;
use serde::{Deserialize, Serialize};

/// Speculation on or off (`SPECULATION`, request field `speculation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Speculation {
    /// Route, grade and answer concurrently over the passages found for the question.
    #[default]
    On,
    /// One model round trip after another, as the graph is drawn.
    Off,
}

impl Speculation {
    /// True when on.
    pub(crate) fn is_on(self) -> bool {
        self == Speculation::On
    }
}

/// `SPECULATION`: `on` (the default) or `off`.
pub(super) fn from_env(env: &Env<'_>) -> Result<Speculation, ConfigError> {
    let value = env.checked("SPECULATION", "on or off", |v| v == "on" || v == "off")?;
    Ok(match value.as_deref() {
        Some("off") => Speculation::Off,
        _ => Speculation::On,
    })
}
