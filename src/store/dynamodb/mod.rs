//! DynamoDB checkpoint store: one table, partition key `pk` (S) = the item key, sort key `sk` (S).
//!
//! The main item (`sk = "head"`) holds `version` (N), `enc` (`raw` | `gzip`), either `body` (B)
//! or `chunks` (N) with a SHA-256 `digest` (B) of the stored bytes, the lease (`lease_owner`,
//! `lease_expires_at` in epoch ms), `expires_at` (N, epoch seconds: the table's TTL attribute,
//! refreshed on every write) and `write_id`, unique per put, so a put whose response was lost
//! and that the SDK retried recognises its own write instead of reporting a conflict.
//!
//! Bodies over 8 KB are gzip-compressed when that makes them smaller. Stored bodies over 350 KB
//! are split into chunk items `sk = "chunk#<version>#<n>"` written in one `TransactWriteItems`
//! together with the head, so a reader never mixes versions. Chunks of older versions are never
//! read again and are left to the TTL. Everything else is one `PutItem` per write.
//!
//! Retries: the SDK's standard retry mode is the infrastructure retry layer (throttling, 5xx,
//! timeouts, connection errors). What still fails after it is classified once, here, as
//! [`StoreError::Transient`] or [`StoreError::Permanent`].
//!
//! Cache items ([`super::CacheStore`]) live in the same table; their layout is in `cache`. The
//! sync function's records ([`super::SyncRecords`]) live in its own table, laid out in
//! `sync_records`.
//! Leased head items also carry `lease_shard`, which lists them in the sparse GSI `leases`
//! the sweeper queries ([`super::LeaseIndex`], in `leases`). Head items an indexer lists carry
//! `owner`, `owner_sort` and `listed_status`, listed by the GSI `by_owner` (in `owner`).

mod body;
mod cache;
mod head;
mod item;
mod leases;
mod owner;
mod pages;
mod rate;
mod sync_records;
mod table;
mod thread;

pub use leases::{LEASE_INDEX, LEASE_SHARD, LEASE_SHARDS};
pub use table::DynamoStore;

use async_trait::async_trait;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;

use super::{CheckpointStore, Lease, ListPage, ListedStatus, StoreError, Versioned};
use body::{Written, INLINE_LIMIT};
use item::{encode, lease_of, num, take_blob};

#[async_trait]
impl CheckpointStore for DynamoStore {
    #[tracing::instrument(
        target = "bounded_rag::spans",
        name = "dynamodb",
        skip_all,
        fields(operation = "GetItem")
    )]
    async fn get(&self, key: &str) -> Result<Option<Versioned>, StoreError> {
        let Some(mut item) = self.head(key, true).await? else {
            return Ok(None);
        };
        let expires_at =
            num(&item, "expires_at").ok_or_else(|| self.corrupt(key, "no expires_at"))?;
        if expires_at < self.now_secs() {
            return Ok(None); // DynamoDB deletes expired items lazily
        }
        let version = num(&item, "version").ok_or_else(|| self.corrupt(key, "no version"))?;
        let enc = self.take_enc(key, &mut item)?;
        let lease = lease_of(&item);
        let stored = match num(&item, "chunks") {
            Some(count) if count > 0 => {
                let digest = take_blob(&mut item, "digest");
                self.read_chunks(key, version, count, digest).await?
            }
            _ => take_blob(&mut item, "body").ok_or_else(|| self.corrupt(key, "no body"))?,
        };
        let body = self.decoded(key, &enc, stored)?;
        Ok(Some(Versioned {
            version,
            body,
            lease,
        }))
    }

    #[tracing::instrument(
        target = "bounded_rag::spans",
        name = "dynamodb",
        skip_all,
        fields(operation = "PutItem")
    )]
    async fn put(
        &self,
        key: &str,
        expected: u64,
        body: &[u8],
        lease: Option<&Lease>,
    ) -> Result<u64, StoreError> {
        let version = expected
            .checked_add(1)
            .ok_or_else(|| StoreError::Permanent(format!("version overflow on {key}")))?;
        let now = self.now_secs();
        let w = Written {
            version,
            expires_at: now.saturating_add(self.ttl.as_secs()),
            lease,
            write_id: uuid::Uuid::new_v4().simple().to_string(),
        };
        let (enc, stored) = encode(body);
        let mut head = self.head_item(key, &w, enc);
        self.add_listing(key, body, &mut head);
        if stored.len() <= INLINE_LIMIT {
            head.insert(
                "body".to_owned(),
                AttributeValue::B(Blob::new(stored.into_owned())),
            );
            self.put_inline(key, expected, now, head, &w).await?;
        } else {
            self.put_chunked(key, expected, now, head, &stored, &w)
                .await?;
        }
        Ok(version)
    }

    fn name(&self) -> &'static str {
        "dynamodb"
    }

    fn threads(&self) -> Option<&dyn super::ThreadStore> {
        Some(self)
    }

    async fn list_owned(
        &self,
        owner: &str,
        status: Option<ListedStatus>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ListPage, StoreError> {
        self.query_owned(owner, status, limit, cursor).await
    }

    #[tracing::instrument(
        target = "bounded_rag::spans",
        name = "dynamodb",
        skip_all,
        fields(operation = "UpdateItem")
    )]
    async fn count_request(
        &self,
        counter: &str,
        window: super::Window,
        limit: u32,
    ) -> Result<bool, StoreError> {
        self.count_in_window(counter, window, limit).await
    }
}
