//! In-memory store for tests and single-process use.
//!
//! Items live in a `HashMap` behind a std `Mutex`; the lock is only held for the few map
//! operations of one call (never across an `.await`), so contention stays negligible.
//! An optional TTL makes items expire like DynamoDB's `expires_at`: an expired item reads as
//! absent and can be created again from version 0. "Now" comes from an injectable clock so
//! tests can move time forward without sleeping. Cache items ([`CacheStore`]) share the map and
//! carry their own expiry. Leased items are listed by [`LeaseIndex`] with a scan of the map
//! (fine in memory; the DynamoDB store uses a sparse index instead).

mod items;

use super::{
    CacheStore, CheckpointStore, Indexer, Lapsed, LapsedLease, Lease, LeaseIndex, ListPage,
    StoreError, Versioned,
};
use crate::clock::{Clock, SystemClock};
use async_trait::async_trait;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// When an item written at `now_ms` expires under `ttl` (epoch milliseconds).
pub(crate) fn expiry_ms(now_ms: u64, ttl: Option<Duration>) -> Option<u64> {
    ttl.map(|ttl| now_ms.saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)))
}

/// True when an item with expiry `expires_at_ms` no longer exists at `now_ms`.
pub(crate) fn is_expired(expires_at_ms: Option<u64>, now_ms: u64) -> bool {
    expires_at_ms.is_some_and(|at| at <= now_ms)
}

/// One stored item and when it lapses.
struct Entry {
    item: Versioned,
    expires_at_ms: Option<u64>,
    /// Re-queue mark of the current lease: (lease owner, when marked). Cleared by every put.
    requeued: Option<(String, u64)>,
}

/// Versioned in-memory store.
///
/// Thread-safe (`Send + Sync`); share it behind an `Arc`. With a TTL, an item expires `ttl`
/// after its last write; an expired item is treated exactly like an absent one.
pub struct MemoryStore {
    items: Mutex<HashMap<String, Entry>>,
    ttl: Option<Duration>,
    clock: Arc<dyn Clock>,
    /// What items are listed under ([`CheckpointStore::list_owned`]); none listed without.
    indexer: Option<Arc<dyn Indexer>>,
}

impl MemoryStore {
    /// An empty store whose items never expire.
    pub fn new() -> Self {
        Self {
            items: Mutex::new(HashMap::new()),
            ttl: None,
            clock: Arc::new(SystemClock),
            indexer: None,
        }
    }

    /// Lists items by owner through `indexer`.
    pub fn with_indexer(mut self, indexer: Arc<dyn Indexer>) -> Self {
        self.indexer = Some(indexer);
        self
    }

    /// An empty store whose items expire `ttl` after their last write.
    pub fn with_ttl(ttl: Duration) -> Self {
        Self {
            ttl: Some(ttl),
            ..Self::new()
        }
    }

    /// Replaces the clock used for expiry (tests pass a [`crate::clock::FakeClock`]).
    #[cfg(test)]
    pub(crate) fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Drops every expired item and returns how many were removed (expired items are already
    /// invisible; this only frees their memory in long-lived processes).
    #[cfg(test)]
    pub(crate) fn purge_expired(&self) -> usize {
        let now_ms = self.now_ms();
        let mut items = self.lock();
        let before = items.len();
        items.retain(|_, entry| !is_expired(entry.expires_at_ms, now_ms));
        before - items.len()
    }

    fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        // No code path can panic while mutating the map half-way, so a poisoned map is
        // still consistent: keep serving instead of failing every later call.
        self.items.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryStore")
            .field("items", &self.lock().len())
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl CheckpointStore for MemoryStore {
    async fn get(&self, key: &str) -> Result<Option<Versioned>, StoreError> {
        let now_ms = self.now_ms();
        let items = self.lock();
        Ok(items
            .get(key)
            .filter(|entry| !is_expired(entry.expires_at_ms, now_ms))
            .map(|entry| entry.item.clone()))
    }

    async fn put(
        &self,
        key: &str,
        expected: u64,
        body: &[u8],
        lease: Option<&Lease>,
    ) -> Result<u64, StoreError> {
        let now_ms = self.now_ms();
        let mut items = self.lock();
        let current = items
            .get(key)
            .filter(|entry| !is_expired(entry.expires_at_ms, now_ms))
            .map_or(0, |entry| entry.item.version);
        if current != expected {
            return Err(StoreError::Conflict {
                key: key.to_owned(),
                expected,
            });
        }
        let version = expected + 1;
        items.insert(
            key.to_owned(),
            Entry {
                item: Versioned {
                    version,
                    body: body.to_vec(),
                    lease: lease.cloned(),
                },
                expires_at_ms: expiry_ms(now_ms, self.ttl),
                requeued: None,
            },
        );
        Ok(version)
    }

    fn name(&self) -> &'static str {
        "memory"
    }

    fn threads(&self) -> Option<&dyn super::ThreadStore> {
        Some(self)
    }

    /// A scan of the map (fine in memory; DynamoDB queries its `by_owner` index).
    async fn list_owned(
        &self,
        owner: &str,
        status: Option<super::ListedStatus>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ListPage, StoreError> {
        let Some(indexer) = &self.indexer else {
            return Err(super::owner::unsupported("memory"));
        };
        let now_ms = self.now_ms();
        let items: Vec<(String, Vec<u8>)> = self
            .lock()
            .iter()
            .filter(|(_, entry)| !is_expired(entry.expires_at_ms, now_ms))
            .map(|(key, entry)| (key.clone(), entry.item.body.clone()))
            .collect();
        let page = super::owner::page_of(items, indexer.as_ref(), owner, status, limit, cursor);
        Ok(page)
    }
}

#[async_trait]
impl CacheStore for MemoryStore {
    async fn get_cached(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let now_ms = self.now_ms();
        let items = self.lock();
        Ok(items
            .get(key)
            .filter(|entry| !is_expired(entry.expires_at_ms, now_ms))
            .map(|entry| entry.item.body.clone()))
    }

    async fn put_cached(&self, key: &str, body: &[u8], ttl: Duration) -> Result<(), StoreError> {
        let now_ms = self.now_ms();
        // Unversioned (version 0): a cache item is never advanced by a conditional put.
        let entry = Entry {
            item: Versioned {
                version: 0,
                body: body.to_vec(),
                lease: None,
            },
            expires_at_ms: expiry_ms(now_ms, Some(ttl)),
            requeued: None,
        };
        self.lock().insert(key.to_owned(), entry);
        Ok(())
    }
}

/// True when `entry` holds a lease that lapsed before `now_ms` and carries no re-queue mark
/// for it newer than `stale_before_ms`.
fn lapsed_unmarked(entry: &Entry, now_ms: u64, stale_before_ms: u64) -> Option<&Lease> {
    let lease = entry.item.lease.as_ref().filter(|l| !l.is_live(now_ms))?;
    let marked = entry
        .requeued
        .as_ref()
        .is_some_and(|(owner, at)| *owner == lease.owner && *at >= stale_before_ms);
    (!marked && !is_expired(entry.expires_at_ms, now_ms)).then_some(lease)
}

#[async_trait]
impl LeaseIndex for MemoryStore {
    async fn lapsed(
        &self,
        now_ms: u64,
        stale_before_ms: u64,
        limit: usize,
    ) -> Result<Lapsed, StoreError> {
        let items = self.lock();
        let mut found: Vec<LapsedLease> = items
            .iter()
            .filter_map(|(key, entry)| {
                let lease = lapsed_unmarked(entry, now_ms, stale_before_ms)?;
                Some(LapsedLease {
                    key: key.clone(),
                    lease: lease.clone(),
                })
            })
            .collect();
        found.sort_by(|a, b| (a.lease.expires_at_ms, &a.key).cmp(&(b.lease.expires_at_ms, &b.key)));
        found.truncate(limit);
        Ok(Lapsed {
            leases: found,
            unlisted: 0,
        })
    }

    async fn claim_requeue(
        &self,
        lapsed: &LapsedLease,
        now_ms: u64,
        stale_before_ms: u64,
    ) -> Result<bool, StoreError> {
        let mut items = self.lock();
        let Some(entry) = items.get_mut(&lapsed.key) else {
            return Ok(false);
        };
        if lapsed_unmarked(entry, now_ms, stale_before_ms) != Some(&lapsed.lease) {
            return Ok(false);
        }
        entry.requeued = Some((lapsed.lease.owner.clone(), now_ms));
        Ok(true)
    }

    async fn release_requeue(
        &self,
        lapsed: &LapsedLease,
        marked_at_ms: u64,
    ) -> Result<(), StoreError> {
        let mut items = self.lock();
        if let Some(entry) = items.get_mut(&lapsed.key) {
            if entry.requeued == Some((lapsed.lease.owner.clone(), marked_at_ms)) {
                entry.requeued = None;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;

    /// A clock to move forward, and the same clock for a store.
    fn fake_clock() -> (Arc<FakeClock>, Arc<dyn Clock>) {
        let clock = Arc::new(FakeClock::at_ms(1_700_000_000_000));
        (clock.clone(), clock)
    }

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    #[tokio::test]
    async fn versions_grow_and_stale_writers_conflict() {
        let store = MemoryStore::new();
        assert_eq!(store.put("run#a", 0, b"one", None).await.unwrap(), 1);
        assert_eq!(store.put("run#a", 1, b"two", None).await.unwrap(), 2);
        let err = store.put("run#a", 1, b"stale", None).await.unwrap_err();
        assert!(
            matches!(err, StoreError::Conflict { expected: 1, .. }),
            "{err}"
        );
        let item = store.get("run#a").await.unwrap().unwrap();
        assert_eq!((item.version, item.body.as_slice()), (2, &b"two"[..]));
    }

    #[tokio::test]
    async fn expired_items_read_as_absent_and_can_be_recreated() {
        let (now, clock) = fake_clock();
        let store = MemoryStore::with_ttl(Duration::from_secs(60)).with_clock(clock);
        store.put("run#a", 0, b"old", None).await.unwrap();
        store.put("run#a", 1, b"old2", None).await.unwrap();

        now.advance(ms(59_999));
        assert_eq!(store.get("run#a").await.unwrap().unwrap().version, 2);

        now.advance(ms(1));
        assert_eq!(store.get("run#a").await.unwrap(), None);
        // Expired means absent: the old version no longer matches, version 0 does.
        let err = store.put("run#a", 2, b"late", None).await.unwrap_err();
        assert!(matches!(err, StoreError::Conflict { expected: 2, .. }));
        assert_eq!(store.put("run#a", 0, b"new", None).await.unwrap(), 1);
        assert_eq!(store.get("run#a").await.unwrap().unwrap().body, b"new");
    }

    #[tokio::test]
    async fn a_write_renews_the_ttl() {
        let (now, clock) = fake_clock();
        let store = MemoryStore::with_ttl(Duration::from_secs(10)).with_clock(clock);
        store.put("run#a", 0, b"x", None).await.unwrap();
        now.advance(ms(9_000));
        store.put("run#a", 1, b"y", None).await.unwrap();
        now.advance(ms(9_000));
        assert_eq!(store.get("run#a").await.unwrap().unwrap().version, 2);
    }

    #[tokio::test]
    async fn purge_drops_only_expired_items() {
        let (now, clock) = fake_clock();
        let store = MemoryStore::with_ttl(Duration::from_secs(10)).with_clock(clock);
        store.put("run#old", 0, b"x", None).await.unwrap();
        now.advance(ms(5_000));
        store.put("run#new", 0, b"x", None).await.unwrap();
        now.advance(ms(5_000));
        assert_eq!(store.purge_expired(), 1);
        assert!(store.get("run#new").await.unwrap().is_some());
        assert!(format!("{store:?}").contains("items: 1"));
    }

    #[tokio::test]
    async fn without_ttl_items_never_expire() {
        let (now, clock) = fake_clock();
        let store = MemoryStore::new().with_clock(clock);
        store.put("run#a", 0, b"x", None).await.unwrap();
        now.advance(ms(100 * 365 * 24 * 3_600_000));
        assert!(store.get("run#a").await.unwrap().is_some());
        assert_eq!(store.purge_expired(), 0);
    }

    #[tokio::test]
    async fn cache_items_expire_after_their_own_ttl() {
        let (now, clock) = fake_clock();
        // The store's TTL (for checkpoints) does not apply to cache items.
        let store = MemoryStore::with_ttl(Duration::from_secs(3_600)).with_clock(clock);
        store
            .put_cached("cache#a", b"reply", Duration::from_secs(10))
            .await
            .unwrap();
        now.advance(ms(9_999));
        assert_eq!(
            store.get_cached("cache#a").await.unwrap().as_deref(),
            Some(&b"reply"[..])
        );
        now.advance(ms(1));
        assert_eq!(store.get_cached("cache#a").await.unwrap(), None);
        assert_eq!(store.purge_expired(), 1);
    }
}
