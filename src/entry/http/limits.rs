//! What the HTTP API admits, read once from the settings: the body size and the per-caller
//! active-run limit.

use crate::config::Settings;

/// What the HTTP API admits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HttpLimits {
    /// `MAX_BODY_BYTES`: the largest accepted request body.
    pub(crate) max_body_bytes: usize,
    /// `MAX_ACTIVE_RUNS_PER_CALLER`: unfinished runs one caller may have (`None`: unlimited).
    pub(crate) max_active_runs_per_caller: Option<u32>,
}

impl HttpLimits {
    /// The limits of `settings`.
    pub(crate) fn new(settings: &Settings) -> Self {
        Self {
            max_body_bytes: settings.max_body_bytes,
            max_active_runs_per_caller: settings.limits.max_active_runs_per_caller,
        }
    }
}
