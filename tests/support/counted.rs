//! Decorators that count what the application asks of its AWS-backed parts, so a test can
//! compare it with what reached the wire: [`Counted`] (checkpoint store and lease index) and
//! [`CountedQueue`].

use async_trait::async_trait;
use bounded_rag::runs::{QueueError, WorkMessage, WorkQueue};
use bounded_rag::store::{
    CheckpointStore, Lapsed, LapsedLease, Lease, LeaseIndex, StoreError, Versioned,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Counts the application's own store, lease-index and queue calls, and the failed puts of
/// each run that could have carried a step (the only way a step's work can be lost; a failed
/// create carries none).
pub struct Counted<S> {
    inner: S,
    /// Calls so far.
    pub gets: AtomicUsize,
    /// Calls so far.
    pub puts: AtomicUsize,
    /// Calls so far.
    pub lapsed: AtomicUsize,
    /// Calls so far.
    pub claims: AtomicUsize,
    /// Calls so far.
    pub releases: AtomicUsize,
    failed_puts: Mutex<HashMap<String, usize>>,
}

impl<S> Counted<S> {
    /// Counts the calls to `inner`.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            gets: AtomicUsize::new(0),
            puts: AtomicUsize::new(0),
            lapsed: AtomicUsize::new(0),
            claims: AtomicUsize::new(0),
            releases: AtomicUsize::new(0),
            failed_puts: Mutex::new(HashMap::new()),
        }
    }

    /// Failed puts of `key` that could have carried a step (not creates).
    pub fn failed_puts(&self, key: &str) -> usize {
        self.failed_puts
            .lock()
            .unwrap()
            .get(key)
            .copied()
            .unwrap_or(0)
    }
}

#[async_trait]
impl<S: CheckpointStore> CheckpointStore for Counted<S> {
    async fn get(&self, key: &str) -> Result<Option<Versioned>, StoreError> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get(key).await
    }

    async fn put(
        &self,
        key: &str,
        expected: u64,
        body: &[u8],
        lease: Option<&Lease>,
    ) -> Result<u64, StoreError> {
        self.puts.fetch_add(1, Ordering::SeqCst);
        let result = self.inner.put(key, expected, body, lease).await;
        if result.is_err() && expected > 0 {
            *self
                .failed_puts
                .lock()
                .unwrap()
                .entry(key.to_owned())
                .or_default() += 1;
        }
        result
    }

    fn name(&self) -> &'static str {
        "counted"
    }
}

#[async_trait]
impl<S: LeaseIndex> LeaseIndex for Counted<S> {
    async fn lapsed(
        &self,
        now_ms: u64,
        stale_before_ms: u64,
        limit: usize,
    ) -> Result<Lapsed, StoreError> {
        self.lapsed.fetch_add(1, Ordering::SeqCst);
        self.inner.lapsed(now_ms, stale_before_ms, limit).await
    }

    async fn claim_requeue(
        &self,
        lapsed: &LapsedLease,
        now_ms: u64,
        stale_before_ms: u64,
    ) -> Result<bool, StoreError> {
        self.claims.fetch_add(1, Ordering::SeqCst);
        self.inner
            .claim_requeue(lapsed, now_ms, stale_before_ms)
            .await
    }

    async fn release_requeue(
        &self,
        lapsed: &LapsedLease,
        marked_at_ms: u64,
    ) -> Result<(), StoreError> {
        self.releases.fetch_add(1, Ordering::SeqCst);
        self.inner.release_requeue(lapsed, marked_at_ms).await
    }
}

/// Counts sends.
pub struct CountedQueue<Q> {
    inner: Q,
    /// Sends so far.
    pub sends: AtomicUsize,
}

impl<Q> CountedQueue<Q> {
    /// Counts the sends to `inner`.
    pub fn new(inner: Q) -> Self {
        Self {
            inner,
            sends: AtomicUsize::new(0),
        }
    }
}

#[async_trait]
impl<Q: WorkQueue> WorkQueue for CountedQueue<Q> {
    async fn send(&self, message: &WorkMessage) -> Result<(), QueueError> {
        self.sends.fetch_add(1, Ordering::SeqCst);
        self.inner.send(message).await
    }
}
