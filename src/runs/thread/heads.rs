//! A thread's head item in the store: read and decoded, encoded and written conditionally on
//! the version read; and a finished turn's item encoded. Every thread operation writes through
//! here.

use super::error::ThreadError;
use super::head::{ThreadHead, TurnRecord};
use crate::engine::EngineError;
use crate::store::{CheckpointStore, HeadWrite, StoreError, ThreadKey, ThreadStore};

/// Head writes retried after losing a race to another request on the same thread.
pub(super) const ATTEMPTS: usize = 8;

/// The thread items of a checkpoint store.
#[derive(Clone, Copy)]
pub(super) struct Heads<'a> {
    store: &'a dyn CheckpointStore,
}

impl<'a> Heads<'a> {
    pub(super) fn new(store: &'a dyn CheckpointStore) -> Self {
        Self { store }
    }

    pub(super) fn threads(&self) -> Result<&'a dyn ThreadStore, ThreadError> {
        self.store.threads().ok_or(ThreadError::Unsupported {
            store: self.store.name(),
        })
    }

    pub(super) async fn read(
        &self,
        key: ThreadKey<'_>,
    ) -> Result<Option<(u64, ThreadHead)>, ThreadError> {
        let Some(stored) = self.threads()?.head(key).await? else {
            return Ok(None);
        };
        let head = serde_json::from_slice(&stored.body).map_err(|e| corrupt(key, e))?;
        Ok(Some((stored.version, head)))
    }

    pub(super) async fn write(
        &self,
        key: ThreadKey<'_>,
        expected: u64,
        head: &ThreadHead,
        ttl_secs: u64,
    ) -> Result<u64, StoreError> {
        let body = serde_json::to_vec(head).map_err(|e| StoreError::Permanent(e.to_string()))?;
        let write = HeadWrite {
            expected,
            body: &body,
            updated_ms: head.updated_at_ms,
            expires_at_ms: head
                .updated_at_ms
                .saturating_add(ttl_secs.saturating_mul(1_000)),
        };
        self.threads()
            .map_err(|e| StoreError::Permanent(e.to_string()))?
            .put_head(key, write)
            .await
    }
}

/// A finished turn's item body.
pub(super) fn encode(record: &TurnRecord) -> Result<Vec<u8>, ThreadError> {
    serde_json::to_vec(record).map_err(|e| StoreError::Permanent(e.to_string()).into())
}

pub(super) fn corrupt(key: ThreadKey<'_>, e: serde_json::Error) -> ThreadError {
    ThreadError::Engine(EngineError::Corrupt {
        run_id: format!("thread {}", key.thread_id),
        message: e.to_string(),
    })
}
