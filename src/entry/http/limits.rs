//! What the HTTP API admits, read once from the settings: the body size, the per-caller
//! active-run limit and the per-caller request rate.

use crate::config::Settings;

/// What the HTTP API admits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HttpLimits {
    /// `MAX_BODY_BYTES`: the largest accepted request body.
    pub(crate) max_body_bytes: usize,
    /// `MAX_ACTIVE_RUNS_PER_CALLER`: unfinished runs one caller may have (`None`: unlimited).
    pub(crate) max_active_runs_per_caller: Option<u32>,
    /// `MAX_REQUESTS_PER_CALLER_PER_MINUTE`: run requests one caller may make per minute
    /// (`None`: unlimited).
    pub(crate) max_requests_per_caller_per_minute: Option<u32>,
}

impl HttpLimits {
    /// The limits of `settings`.
    pub(crate) fn new(settings: &Settings) -> Self {
        Self {
            max_body_bytes: settings.max_body_bytes,
            max_active_runs_per_caller: settings.limits.max_active_runs_per_caller,
            max_requests_per_caller_per_minute: settings.limits.max_requests_per_caller_per_minute,
        }
    }
}
