//! What a running step may use from the engine: the remaining budget and the node's retry
//! policy for its remote calls.

use super::Budget;
use crate::clock::Clock;
use crate::error::Classify;
use crate::retry::RetryPolicy;
use crate::usage::{Meter, Usage};
use std::fmt::Display;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

/// Handed to each step; lives for one step.
pub struct StepCtx<'a> {
    node: &'static str,
    run_id: &'a str,
    clock: &'a dyn Clock,
    budget: &'a Budget,
    policy: RetryPolicy,
    retries: AtomicU32,
    out_of_budget: AtomicBool,
    meter: Meter,
}

impl<'a> StepCtx<'a> {
    pub(crate) fn new(
        node: &'static str,
        run_id: &'a str,
        clock: &'a dyn Clock,
        budget: &'a Budget,
        policy: RetryPolicy,
    ) -> Self {
        Self {
            node,
            run_id,
            clock,
            budget,
            policy,
            retries: AtomicU32::new(0),
            out_of_budget: AtomicBool::new(false),
            meter: Meter::default(),
        }
    }

    /// Time left before the deadline; pass it as the timeout of remote calls.
    pub(crate) fn remaining(&self) -> Duration {
        self.budget.remaining(self.clock.now_ms())
    }

    /// The run being advanced.
    pub fn run_id(&self) -> &str {
        self.run_id
    }

    /// Retries made by this step so far.
    pub(crate) fn retries(&self) -> u32 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Where this step's model calls record their tokens.
    pub(crate) fn meter(&self) -> &Meter {
        &self.meter
    }

    /// Tokens and calls this step used so far.
    pub(crate) fn usage(&self) -> Usage {
        self.meter.usage()
    }

    /// True when a retry was given up because its backoff would not fit in the budget.
    pub(crate) fn ran_out_of_budget(&self) -> bool {
        self.out_of_budget.load(Ordering::Relaxed)
    }

    /// Runs `op`, retrying transient errors per the node's policy: full-jitter backoff,
    /// `Retry-After` honoured, never past the deadline. Permanent errors return at once.
    pub(crate) async fn retry<T, E, F, Fut>(&self, what: &str, mut op: F) -> Result<T, E>
    where
        E: Classify + Display,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let max = self.policy.max_retries;
        let mut retry = 0;
        loop {
            let error = match op().await {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            if !error.is_transient() {
                tracing::warn!(node = self.node, what, %error, "permanent error, not retried");
                return Err(error);
            }
            if retry >= max {
                tracing::warn!(node = self.node, what, %error, "max retries reached ({max}/{max})");
                return Err(error);
            }
            retry += 1;
            let delay = self
                .policy
                .delay(retry, error.retry_after(), &mut rand::rng());
            if delay >= self.remaining() {
                self.out_of_budget.store(true, Ordering::Relaxed);
                tracing::warn!(node = self.node, what, %error, ?delay, "retry would pass the deadline; giving up");
                return Err(error);
            }
            tracing::info!(node = self.node, what, %error, ?delay, "retry {retry}/{max}");
            self.retries.fetch_add(1, Ordering::Relaxed);
            self.clock.sleep(delay).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::error::ErrorClass;
    use std::sync::atomic::AtomicUsize;

    #[derive(Debug)]
    struct E(ErrorClass, Option<Duration>);
    impl Display for E {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{:?}", self.0)
        }
    }
    impl Classify for E {
        fn class(&self) -> ErrorClass {
            self.0
        }
        fn retry_after(&self) -> Option<Duration> {
            self.1
        }
    }

    fn budget(clock: &FakeClock, secs: u64) -> Budget {
        Budget::new(50, clock.now_ms() + secs * 1_000)
    }

    async fn run_script(
        clock: &FakeClock,
        budget: &Budget,
        script: Vec<Result<u32, E>>,
    ) -> (Result<u32, E>, usize, u32) {
        let ctx = StepCtx::new("n", "r", clock, budget, RetryPolicy::REMOTE);
        let calls = AtomicUsize::new(0);
        let script = std::sync::Mutex::new(script.into_iter());
        let out = ctx
            .retry("op", || {
                calls.fetch_add(1, Ordering::SeqCst);
                let next = script.lock().unwrap().next().expect("script exhausted");
                async move { next }
            })
            .await;
        (out, calls.load(Ordering::SeqCst), ctx.retries())
    }

    #[tokio::test]
    async fn transient_errors_are_retried_until_success() {
        let clock = FakeClock::at_ms(0);
        let b = budget(&clock, 60);
        let t = || Err(E(ErrorClass::Transient, None));
        let (out, calls, retries) = run_script(&clock, &b, vec![t(), t(), Ok(7)]).await;
        assert_eq!(out.unwrap(), 7);
        assert_eq!((calls, retries), (3, 2));
        assert_eq!(clock.sleeps().len(), 2);
    }

    #[tokio::test]
    async fn permanent_error_is_never_retried() {
        let clock = FakeClock::at_ms(0);
        let b = budget(&clock, 60);
        let (out, calls, _) =
            run_script(&clock, &b, vec![Err(E(ErrorClass::Permanent, None))]).await;
        assert!(out.is_err());
        assert_eq!(calls, 1);
        assert!(clock.sleeps().is_empty());
    }

    #[tokio::test]
    async fn gives_up_after_max_retries() {
        let clock = FakeClock::at_ms(0);
        let b = budget(&clock, 600);
        let script = (0..10)
            .map(|_| Err(E(ErrorClass::Transient, None)))
            .collect();
        let (out, calls, retries) = run_script(&clock, &b, script).await;
        assert!(out.is_err());
        assert_eq!((calls, retries), (4, 3));
    }

    #[tokio::test]
    async fn retry_after_is_honoured() {
        let clock = FakeClock::at_ms(0);
        let b = budget(&clock, 60);
        let script = vec![
            Err(E(ErrorClass::Transient, Some(Duration::from_secs(2)))),
            Ok(1),
        ];
        let (out, calls, _) = run_script(&clock, &b, script).await;
        assert_eq!(out.unwrap(), 1);
        assert_eq!(calls, 2);
        assert!(clock.sleeps()[0] >= Duration::from_secs(2));
    }

    #[tokio::test]
    async fn a_retry_that_would_pass_the_deadline_is_not_made() {
        let clock = FakeClock::at_ms(0);
        let b = budget(&clock, 1);
        let script = vec![
            Err(E(ErrorClass::Transient, Some(Duration::from_secs(5)))),
            Ok(1),
        ];
        let ctx = StepCtx::new("n", "r", &clock, &b, RetryPolicy::REMOTE);
        let mut script = script.into_iter();
        let out = ctx
            .retry("op", || std::future::ready(script.next().unwrap()))
            .await;
        assert!(out.is_err());
        assert!(ctx.ran_out_of_budget());
        assert!(clock.sleeps().is_empty());
    }
}
