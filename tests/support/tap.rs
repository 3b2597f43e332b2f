//! [`Tap`]: a [`CheckpointStore`] that forwards to a real one, records every put on the way and
//! can fail one chosen put, as if the invocation died right there.

use async_trait::async_trait;
use bounded_rag::store::{CheckpointStore, Lease, StoreError, Versioned};
use std::sync::Mutex;

/// Wraps `inner`: reads pass through untouched; every put is recorded (body length, in call
/// order) before it is forwarded, unless it is the one put told to fail.
pub struct Tap<S> {
    inner: S,
    /// Body length of each put, in call order, the failed one included.
    put_bytes: Mutex<Vec<usize>>,
    /// Which put fails (1-based, counting every put) and with what; taken when it fires.
    failure: Mutex<Option<(usize, StoreError)>>,
}

impl<S: CheckpointStore> Tap<S> {
    /// A tap that only records.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            put_bytes: Mutex::new(Vec::new()),
            failure: Mutex::new(None),
        }
    }

    /// The same tap, but its `n`-th put (1-based) returns `error` instead of reaching the inner
    /// store; the puts before and after it go through.
    pub fn failing_put(self, n: usize, error: StoreError) -> Self {
        assert!(n >= 1, "puts are counted from 1");
        *self.failure.lock().unwrap() = Some((n, error));
        self
    }

    /// The same tap, but its `n`-th put fails transiently, as if the invocation died there.
    pub fn dies_on(self, n: usize) -> Self {
        self.failing_put(n, StoreError::Transient("invocation died".into()))
    }

    /// How many puts were made, the failed one included.
    pub fn puts(&self) -> usize {
        self.put_bytes.lock().unwrap().len()
    }

    /// The body length of each put, in call order.
    pub fn bodies(&self) -> Vec<usize> {
        self.put_bytes.lock().unwrap().clone()
    }
}

#[async_trait]
impl<S: CheckpointStore> CheckpointStore for Tap<S> {
    async fn get(&self, key: &str) -> Result<Option<Versioned>, StoreError> {
        self.inner.get(key).await
    }

    async fn put(
        &self,
        key: &str,
        expected: u64,
        body: &[u8],
        lease: Option<&Lease>,
    ) -> Result<u64, StoreError> {
        let n = {
            let mut recorded = self.put_bytes.lock().unwrap();
            recorded.push(body.len());
            recorded.len()
        };
        let failure = {
            let mut failure = self.failure.lock().unwrap();
            match *failure {
                Some((at, _)) if at == n => failure.take(),
                _ => None,
            }
        };
        if let Some((_, error)) = failure {
            return Err(error);
        }
        self.inner.put(key, expected, body, lease).await
    }

    fn name(&self) -> &'static str {
        "tap"
    }
}
