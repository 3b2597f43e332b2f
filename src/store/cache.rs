//! Expiring cache items kept next to the checkpoints: the [`CacheStore`] trait.
//!
//! Checkpoints are versioned and written conditionally; a cache item is neither. It is a body
//! under a key ([`super::StoreKey::Cache`]) with its own lifetime, and the last writer wins: two
//! writers of one key store the same reply, so there is nothing to protect. Every store that
//! holds checkpoints ([`super::MemoryStore`], [`super::FileStore`], [`super::DynamoStore`])
//! holds cache items too, in the same map, folder or table.

use super::StoreError;
use async_trait::async_trait;
use std::time::Duration;

/// Unversioned items that expire: reads treat an item past its expiry as absent, even where
/// the backend deletes expired items lazily (DynamoDB's TTL).
#[async_trait]
pub trait CacheStore: Send + Sync {
    /// The body under `key`, or `None` when absent or expired.
    async fn get_cached(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Stores `body` under `key` until `ttl` from now, replacing whatever was there (last
    /// writer wins). A zero `ttl` stores an item that is already expired.
    async fn put_cached(&self, key: &str, body: &[u8], ttl: Duration) -> Result<(), StoreError>;
}
