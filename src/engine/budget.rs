//! The run's limits: a step limit counted across resumes and a wall-clock deadline.

use std::time::Duration;

/// Longest a Lambda invocation can run; a deadline further away than this (plus slack) is not a
/// real Lambda deadline (`cargo lambda watch` sends such values).
const MAX_LAMBDA_TIMEOUT: Duration = Duration::from_secs(15 * 60 + 60);

/// What bounds one invocation of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Total steps allowed for the run, across every invocation (`WORKFLOW_RECURSION_LIMIT`).
    pub max_steps: u32,
    /// No node starts unless it can finish before this instant (Unix epoch ms).
    pub deadline_ms: u64,
    /// Tokens allowed for the run, across every invocation (`MAX_TOKENS_PER_RUN`, or the
    /// request's `max_tokens` when lower); `None` means unbounded.
    pub max_tokens: Option<u64>,
}

impl Budget {
    /// `max_steps` steps, and no node starts unless it can finish before `deadline_ms`.
    pub const fn new(max_steps: u32, deadline_ms: u64) -> Self {
        Self {
            max_steps,
            deadline_ms,
            max_tokens: None,
        }
    }

    /// The same budget with a token limit for the whole run.
    pub(crate) const fn with_max_tokens(mut self, max_tokens: Option<u64>) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Builds a budget from an invocation deadline.
    ///
    /// The usable deadline is `deadline - margin`, capped at `now + cap`. A deadline that is
    /// missing, already past, or absurdly far away means "use the configured cap".
    pub(crate) fn from_deadline(
        max_steps: u32,
        deadline_ms: Option<u64>,
        now_ms: u64,
        margin: Duration,
        cap: Duration,
    ) -> Self {
        let capped = now_ms.saturating_add(cap.as_millis() as u64);
        let usable = deadline_ms
            .filter(|d| *d > now_ms)
            .filter(|d| *d <= now_ms.saturating_add(MAX_LAMBDA_TIMEOUT.as_millis() as u64))
            .map(|d| d.saturating_sub(margin.as_millis() as u64));
        let deadline_ms = match usable {
            Some(d) => d.min(capped),
            None => capped,
        };
        Self::new(max_steps, deadline_ms)
    }

    /// Time left at `now_ms` (zero once the deadline has passed).
    pub(crate) fn remaining(&self, now_ms: u64) -> Duration {
        Duration::from_millis(self.deadline_ms.saturating_sub(now_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_700_000_000_000;
    const MARGIN: Duration = Duration::from_millis(500);
    const CAP: Duration = Duration::from_secs(60);

    #[test]
    fn real_deadline_minus_margin() {
        let b = Budget::from_deadline(50, Some(NOW + 10_000), NOW, MARGIN, CAP);
        assert_eq!(b.deadline_ms, NOW + 9_500);
        assert_eq!(b.remaining(NOW), Duration::from_millis(9_500));
    }

    #[test]
    fn missing_past_or_absurd_deadline_uses_cap() {
        for deadline in [None, Some(NOW - 1), Some(NOW + 3_600_000), Some(u64::MAX)] {
            let b = Budget::from_deadline(50, deadline, NOW, MARGIN, CAP);
            assert_eq!(b.deadline_ms, NOW + 60_000, "deadline {deadline:?}");
        }
    }

    #[test]
    fn cap_bounds_a_long_real_deadline() {
        let b = Budget::from_deadline(50, Some(NOW + 600_000), NOW, MARGIN, CAP);
        assert_eq!(b.deadline_ms, NOW + 60_000);
    }

    #[test]
    fn margin_larger_than_time_left_leaves_nothing() {
        let b = Budget::from_deadline(50, Some(NOW + 100), NOW, MARGIN, CAP);
        assert_eq!(b.remaining(NOW), Duration::ZERO);
    }
}
