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

/// A moment in epoch milliseconds as UTC to the second, rounded up (`2026-11-24T06:40:12Z`):
/// for "wait until" messages, where the time shown must not be before the real one.
pub fn utc_seconds(ms: u64) -> String {
    let secs = ms.div_ceil(1_000);
    let format =
        time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
    i64::try_from(secs)
        .ok()
        .and_then(|s| OffsetDateTime::from_unix_timestamp(s).ok())
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| format!("{ms} ms after the Unix epoch"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_seconds_rounds_up_to_the_second() {
        assert_eq!(utc_seconds(1_795_480_794_000), "2026-11-24T00:39:54Z");
        assert_eq!(utc_seconds(1_795_480_794_001), "2026-11-24T00:39:55Z");
    }

    #[test]
    fn formats_utc_rfc3339() {
        assert_eq!(rfc3339(1_700_000_000_123_000), "2023-11-14T22:13:20.123Z");
    }
}
