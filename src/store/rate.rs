//! Request counting for the per-caller rate limit (`MAX_REQUESTS_PER_CALLER_PER_MINUTE`):
//! fixed one-minute windows, one counter per caller and window.
//!
//! A fixed window rather than a token bucket, because a window's counter is taken with one
//! conditional write and no read on DynamoDB (`ADD hits :one` if `hits < :limit`), while a
//! bucket's refill depends on the time of the previous request, which an update expression
//! cannot compute. The price: a caller may spend a window's limit at its end and the next
//! window's at the start of that one (at most twice the limit in any 60 s), never more than
//! the limit within one window.

use super::StoreError;
use serde::{Deserialize, Serialize};

/// Length of a window.
pub(crate) const WINDOW_MS: u64 = 60_000;

/// One fixed window: the minutes since the Unix epoch, aligned on whole minutes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Which minute since the epoch.
    pub index: u64,
}

impl Window {
    /// The window holding `now_ms`.
    pub fn at(now_ms: u64) -> Self {
        Self {
            index: now_ms / WINDOW_MS,
        }
    }

    /// When the window ends (epoch milliseconds): the next request is admitted then at the
    /// latest.
    pub fn ends_at_ms(self) -> u64 {
        self.index.saturating_add(1).saturating_mul(WINDOW_MS)
    }
}

/// The stored counter of the version-based implementation (the default of
/// [`CheckpointStore::count_request`](super::CheckpointStore::count_request), for stores whose
/// writes are conditional on a version: memory, files): one item per caller, reset when a new
/// window starts, so a store without expiring items keeps one small item per caller.
///
/// A request reads the caller's counter and writes it back one higher on the version read. A
/// conflict means another request of the caller was counted meanwhile, so it re-reads; every
/// conflict is another request's success, so it ends within `limit + 1` rounds.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Counter {
    window: u64,
    hits: u32,
}

impl Counter {
    /// The hits counted in `window` by the counter stored under `key` (`None`: none stored);
    /// a counter of an earlier window counts none.
    pub(crate) fn hits_in(
        key: &str,
        stored: Option<&[u8]>,
        window: Window,
    ) -> Result<u32, StoreError> {
        let Some(body) = stored else {
            return Ok(0);
        };
        let stored: Counter = serde_json::from_slice(body)
            .map_err(|e| StoreError::Permanent(format!("rate counter {key} is unreadable: {e}")))?;
        Ok(if stored.window == window.index {
            stored.hits
        } else {
            0
        })
    }

    /// The body of the counter under `key` after one more hit in `window`.
    pub(crate) fn one_more(key: &str, hits: u32, window: Window) -> Result<Vec<u8>, StoreError> {
        serde_json::to_vec(&Counter {
            window: window.index,
            hits: hits + 1,
        })
        .map_err(|e| StoreError::Permanent(format!("cannot encode rate counter {key}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{CheckpointStore, MemoryStore};
    use std::sync::Arc;

    #[test]
    fn windows_are_whole_minutes() {
        assert_eq!(Window::at(0), Window::at(59_999));
        assert_ne!(Window::at(59_999), Window::at(60_000));
        assert_eq!(Window::at(61_000).ends_at_ms(), 120_000);
    }

    #[tokio::test]
    async fn exactly_the_limit_is_counted_per_window_under_concurrency() {
        let store = Arc::new(MemoryStore::new());
        let window = Window::at(1_000_000);
        let tasks: Vec<_> = (0..40)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move { store.count_request("c", window, 7).await.unwrap() })
            })
            .collect();
        let mut admitted = 0;
        for task in tasks {
            admitted += usize::from(task.await.unwrap());
        }
        assert_eq!(admitted, 7);
        let next = Window {
            index: window.index + 1,
        };
        assert!(store.count_request("c", next, 7).await.unwrap());
        assert!(store.count_request("other", window, 7).await.unwrap());
    }
}
