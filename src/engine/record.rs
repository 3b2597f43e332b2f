//! Step records: what the caller sees in `workflow_steps`.

use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// One executed step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// Node name.
    pub name: String,
    /// When the step started (RFC 3339, UTC).
    pub timestamp: String,
    /// Seconds the step took, retries and backoff included.
    pub processing_time: f64,
    /// Node-specific facts (decision, counters, documents found).
    pub details: serde_json::Value,
}

/// RFC 3339 text for a time in microseconds since the epoch.
pub fn rfc3339(micros: u64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_rfc3339() {
        assert_eq!(rfc3339(1_700_000_000_123_000), "2023-11-14T22:13:20.123Z");
    }
}
