//! Checkpoint persistence: the [`CheckpointStore`] trait (versioned, conditional writes, leases)
//! with in-memory and local-file implementations. The DynamoDB one lives in `dynamodb`. The same
//! stores also hold expiring cache items ([`CacheStore`], in `cache`). The memory and DynamoDB
//! stores list runs whose lease lapsed ([`LeaseIndex`], in `leases`) for the sweeper, and an
//! owner's items newest first ([`CheckpointStore::list_owned`], in `owner`). Every store also
//! keeps the sync function's records ([`SyncRecords`], in `sync_records`).

mod cache;
mod dynamodb;
mod error;
mod file;
mod key;
mod leases;
mod memory;
mod owner;
mod rate;
mod sync_records;
mod thread;

pub use cache::CacheStore;
pub use dynamodb::{DynamoStore, LEASE_INDEX, LEASE_SHARD, LEASE_SHARDS};
pub use error::StoreError;
pub use file::FileStore;
pub(crate) use key::{OwnerKey, SortKey, StoreKey};
pub use leases::{Lapsed, LapsedLease, LeaseIndex};
pub use memory::MemoryStore;
pub(crate) use owner::decode_cursor;
pub(crate) use owner::Listed;
pub use owner::{Indexer, ListPage, ListedStatus, Listing, OWNER, OWNER_INDEX, OWNER_SORT};
pub use rate::Window;
pub use sync_records::{DocPhase, DocRecord, JobRecord, PublishEnd, SyncControl, SyncRecords};
pub use thread::{HeadWrite, ListedHead, StoredHead, ThreadKey, ThreadStore};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Exclusive right to advance a run until `expires_at_ms` (Unix epoch milliseconds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// Who holds it (one id per invocation).
    pub owner: String,
    /// When it lapses, so a crashed holder's run can be picked up.
    pub expires_at_ms: u64,
}

/// Owner prefix of a parked lease.
const PARKED: &str = "parked:";

impl Lease {
    /// A parked lease until `expires_at_ms`: held by no invocation (a run waiting for its
    /// queue message), so anyone may take the run at once, but it lapses like any other lease
    /// and the sweeper then finds the run if nobody came.
    pub(crate) fn parked(expires_at_ms: u64) -> Self {
        Self {
            owner: format!("{PARKED}{}", uuid::Uuid::new_v4()),
            expires_at_ms,
        }
    }

    /// This lease, parked: same expiry, no longer held by its invocation.
    pub(crate) fn to_parked(&self) -> Self {
        Self {
            owner: format!("{PARKED}{}", self.owner.trim_start_matches(PARKED)),
            expires_at_ms: self.expires_at_ms,
        }
    }

    /// True for a parked lease ([`Lease::parked`]).
    pub fn is_parked(&self) -> bool {
        self.owner.starts_with(PARKED)
    }

    /// True when the lease has not lapsed at `now_ms`.
    pub fn is_live(&self, now_ms: u64) -> bool {
        self.expires_at_ms > now_ms
    }

    /// True when the lease keeps another invocation from taking the run at `now_ms`: live and
    /// not parked.
    pub(crate) fn binds(&self, now_ms: u64) -> bool {
        self.is_live(now_ms) && !self.is_parked()
    }
}

/// One stored item: an opaque body (JSON produced by the engine) at a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned {
    /// Starts at 1 for the first write and grows by one per write.
    pub version: u64,
    /// Serialized payload.
    pub body: Vec<u8>,
    /// Current lease, if any.
    pub lease: Option<Lease>,
}

/// Key-value store with optimistic concurrency. Keys look like `run#<id>` or `idem#<key>`.
///
/// Every write is conditional on the version the writer read, so two writers can never both
/// succeed from the same version: the loser gets [`StoreError::Conflict`] and must stop.
#[async_trait]
pub trait CheckpointStore: Send + Sync {
    /// The item under `key`, or `None` when absent or expired.
    async fn get(&self, key: &str) -> Result<Option<Versioned>, StoreError>;

    /// Writes `body` (and `lease`, `None` clears it) as version `expected + 1`, only if the
    /// stored version is `expected` (`0` means "must not exist yet"). Returns the new version.
    async fn put(
        &self,
        key: &str,
        expected: u64,
        body: &[u8],
        lease: Option<&Lease>,
    ) -> Result<u64, StoreError>;

    /// Short backend name for logs (`memory`, `file`, `dynamodb`).
    fn name(&self) -> &'static str;

    /// The conversation threads kept in the same store, if it keeps any.
    fn threads(&self) -> Option<&dyn ThreadStore> {
        None
    }

    /// Up to `limit` items listed under `owner` (by the store's [`Indexer`]), newest first,
    /// only those listed with `status` when given, after `cursor` (a [`ListPage::cursor`]).
    /// Stores that cannot list refuse (the default).
    async fn list_owned(
        &self,
        owner: &str,
        status: Option<ListedStatus>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ListPage, StoreError> {
        let _ = (owner, status, limit, cursor);
        Err(owner::unsupported(self.name()))
    }

    /// Counts one request of `counter` (a caller's digest) in `window` unless `limit` were
    /// counted there already: `true` when counted (`MAX_REQUESTS_PER_CALLER_PER_MINUTE`). By
    /// default a read and a write conditional on its version, repeated on a conflict
    /// ([`rate::Counter`]); DynamoDB does it in one conditional `UpdateItem`.
    async fn count_request(
        &self,
        counter: &str,
        window: Window,
        limit: u32,
    ) -> Result<bool, StoreError> {
        let key = StoreKey::Rate(counter).to_string();
        loop {
            let stored = self.get(&key).await?;
            let version = stored.as_ref().map_or(0, |item| item.version);
            let body = stored.as_ref().map(|item| item.body.as_slice());
            let hits = rate::Counter::hits_in(&key, body, window)?;
            if hits >= limit {
                return Ok(false);
            }
            let body = rate::Counter::one_more(&key, hits, window)?;
            match self.put(&key, version, &body, None).await {
                Ok(_) => return Ok(true),
                Err(StoreError::Conflict { .. }) => continue,
                Err(other) => return Err(other),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parked_lease_lapses_like_any_lease_but_never_binds() {
        let held = Lease {
            owner: "invocation-1".into(),
            expires_at_ms: 1_000,
        };
        assert!(held.binds(999) && !held.binds(1_000));
        let parked = held.to_parked();
        assert!(parked.is_parked() && parked.is_live(999) && !parked.binds(999));
        assert_eq!(parked.expires_at_ms, 1_000);
        assert_eq!(parked.to_parked(), parked);
        let queued = Lease::parked(5_000);
        assert!(queued.is_parked() && !queued.binds(0) && !queued.is_live(5_000));
        assert_ne!(queued.owner, Lease::parked(5_000).owner);
    }
}
