//! Injected time: the one clock every deadline and expiry reads (run budgets, backoff, leases,
//! checkpoint and cache TTLs, the secrets cache, the knowledge-base refresh, `Retry-After`
//! dates). Nothing else reads the system clock or sleeps directly, so tests run deadline,
//! backoff and expiry cases instantly with [`FakeClock`]. It sits below every layer because the
//! stores, which lie below the engine, need it too. Times as text (RFC 3339, and UTC to the
//! second for "wait until" messages) are here too.

use async_trait::async_trait;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Wall-clock time and sleeping. `Debug` so the clients holding one can derive it.
#[async_trait]
pub trait Clock: std::fmt::Debug + Send + Sync {
    /// Microseconds since the Unix epoch.
    fn now_micros(&self) -> u64;

    /// Waits for `duration`.
    async fn sleep(&self, duration: Duration);

    /// Milliseconds since the Unix epoch (the unit of Lambda deadlines).
    fn now_ms(&self) -> u64 {
        self.now_micros() / 1_000
    }

    /// Whole seconds since the Unix epoch (the unit of DynamoDB TTLs).
    fn now_secs(&self) -> u64 {
        self.now_micros() / 1_000_000
    }

    /// The time as a [`SystemTime`] (for HTTP dates).
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_micros(self.now_micros())
    }
}

/// The real clock: `SystemTime` and `tokio::time::sleep`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

#[async_trait]
impl Clock for SystemClock {
    fn now_micros(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0)
    }

    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}

/// A clock that only moves when told to: `sleep` advances it instantly and is recorded.
#[derive(Debug, Default)]
pub struct FakeClock {
    now_micros: AtomicU64,
    sleeps: Mutex<Vec<Duration>>,
}

impl FakeClock {
    /// A clock reading `start_ms` milliseconds since the epoch.
    pub fn at_ms(start_ms: u64) -> Self {
        Self {
            now_micros: AtomicU64::new(start_ms * 1_000),
            sleeps: Mutex::new(Vec::new()),
        }
    }

    /// Moves time forward, as if work took `duration`.
    pub fn advance(&self, duration: Duration) {
        self.now_micros
            .fetch_add(duration.as_micros() as u64, Ordering::SeqCst);
    }

    /// Every `sleep` so far, in order.
    pub fn sleeps(&self) -> Vec<Duration> {
        self.sleeps.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl Clock for FakeClock {
    fn now_micros(&self) -> u64 {
        self.now_micros.load(Ordering::SeqCst)
    }

    async fn sleep(&self, duration: Duration) {
        if let Ok(mut sleeps) = self.sleeps.lock() {
            sleeps.push(duration);
        }
        self.advance(duration);
    }
}

/// RFC 3339 text for a time in microseconds since the epoch.
pub(crate) fn rfc3339(micros: u64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}

/// RFC 3339 text for a time in milliseconds since the epoch.
pub fn rfc3339_ms(ms: u64) -> String {
    rfc3339(ms.saturating_mul(1_000))
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

    #[tokio::test]
    async fn fake_clock_sleep_advances_time_and_is_recorded() {
        let clock = FakeClock::at_ms(1_000);
        clock.sleep(Duration::from_millis(250)).await;
        clock.advance(Duration::from_millis(50));
        assert_eq!(clock.now_ms(), 1_300);
        assert_eq!(clock.sleeps(), vec![Duration::from_millis(250)]);
    }

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
