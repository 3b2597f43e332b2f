//! Per-node infrastructure retry policy: exponential backoff with full jitter.
//!
//! Hand-written on purpose (a few lines): the delay must honour `Retry-After`, stay inside the
//! run's remaining budget and sleep on the injected clock, which general retry crates do not
//! combine (backon's jitter, for one, is additive rather than full).

use rand::Rng;
use std::time::Duration;

/// How a node's transient failures are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 = never retry).
    pub max_retries: u32,
    /// Cap of the first backoff window.
    pub base_delay: Duration,
    /// Cap of any backoff window.
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// No retries at all (local, deterministic nodes).
    pub const NONE: RetryPolicy = RetryPolicy {
        max_retries: 0,
        base_delay: Duration::ZERO,
        max_delay: Duration::ZERO,
    };

    /// The policy for calls to remote services: 3 retries, 200 ms doubling up to 5 s.
    pub(crate) const REMOTE: RetryPolicy = RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(200),
        max_delay: Duration::from_secs(5),
    };

    /// The backoff window before retry number `retry` (1-based): `min(max, base * 2^(retry-1))`.
    pub(crate) fn window(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        self.base_delay.saturating_mul(factor).min(self.max_delay)
    }

    /// Full jitter: a uniform delay in `[0, window]`, but never less than a server's
    /// `Retry-After`.
    pub(crate) fn delay(
        &self,
        retry: u32,
        retry_after: Option<Duration>,
        rng: &mut impl Rng,
    ) -> Duration {
        let window = self.window(retry).as_millis() as u64;
        let jittered = Duration::from_millis(rng.random_range(0..=window));
        match retry_after {
            Some(after) => jittered.max(after),
            None => jittered,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::{rngs::StdRng, SeedableRng};

    #[test]
    fn window_doubles_then_caps() {
        let p = RetryPolicy::REMOTE;
        let windows: Vec<u64> = (1..=7).map(|r| p.window(r).as_millis() as u64).collect();
        assert_eq!(windows, vec![200, 400, 800, 1600, 3200, 5000, 5000]);
    }

    #[test]
    fn retry_after_is_a_floor() {
        let mut rng = StdRng::seed_from_u64(7);
        let d = RetryPolicy::REMOTE.delay(1, Some(Duration::from_secs(2)), &mut rng);
        assert!(d >= Duration::from_secs(2));
    }

    proptest! {
        #[test]
        fn full_jitter_stays_inside_the_window(retry in 1u32..40, seed in any::<u64>()) {
            let mut rng = StdRng::seed_from_u64(seed);
            let p = RetryPolicy::REMOTE;
            prop_assert!(p.delay(retry, None, &mut rng) <= p.window(retry));
        }
    }
}
