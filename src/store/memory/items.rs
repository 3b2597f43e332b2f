//! [`LocalItems`] for the memory store: what threads ([`crate::store::ThreadStore`]) need
//! besides conditional puts (a pass over the map for an owner's listing, and deletion).

use super::{is_expired, MemoryStore};
use crate::store::thread::LocalItems;
use crate::store::StoreError;
use async_trait::async_trait;

#[async_trait]
impl LocalItems for MemoryStore {
    async fn bodies_with_prefix(&self, prefix: &str) -> Result<Vec<Vec<u8>>, StoreError> {
        let now_ms = self.now_ms();
        Ok(self
            .lock()
            .iter()
            .filter(|(key, entry)| {
                key.starts_with(prefix) && !is_expired(entry.expires_at_ms, now_ms)
            })
            .map(|(_, entry)| entry.item.body.clone())
            .collect())
    }

    async fn remove(&self, key: &str, expected: Option<u64>) -> Result<(), StoreError> {
        let now_ms = self.now_ms();
        let mut items = self.lock();
        let current = items
            .get(key)
            .filter(|entry| !is_expired(entry.expires_at_ms, now_ms))
            .map_or(0, |entry| entry.item.version);
        if let Some(expected) = expected.filter(|e| *e != current) {
            return Err(StoreError::Conflict {
                key: key.to_owned(),
                expected,
            });
        }
        items.remove(key);
        Ok(())
    }

    fn now_ms(&self) -> u64 {
        MemoryStore::now_ms(self)
    }
}
