//! [`CacheStore`] on the checkpoint table: one item per key, `pk` = the key (`cache#<hex>`),
//! `sk = "head"`, with `enc` and `body` encoded as for checkpoints (gzip over 8 KB when that is
//! smaller) and `expires_at` (N, epoch seconds: the table's TTL attribute). No version, no
//! lease, no chunks: one unconditional `PutItem` per write, last writer wins, and a body that
//! does not fit in one item is [`StoreError::TooLarge`].
//!
//! DynamoDB deletes expired items lazily (often days late), so a read treats an item whose
//! `expires_at` has come as absent.

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;

use super::body::INLINE_LIMIT;
use super::item::{encode, n, num, s, take_blob, Item};
use super::table::DynamoStore;
use crate::store::{CacheStore, SortKey, StoreError};

#[async_trait]
impl CacheStore for DynamoStore {
    async fn get_cached(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        // Eventually consistent: half the read cost, and a reply cached a moment ago that a
        // reader misses only costs one model call.
        let Some(mut item) = self.head(key, false).await? else {
            return Ok(None);
        };
        let expires_at =
            num(&item, "expires_at").ok_or_else(|| self.corrupt(key, "no expires_at"))?;
        if expires_at <= self.now_secs() {
            return Ok(None);
        }
        let enc = self.take_enc(key, &mut item)?;
        let stored = take_blob(&mut item, "body").ok_or_else(|| self.corrupt(key, "no body"))?;
        Ok(Some(self.decoded(key, &enc, stored)?))
    }

    async fn put_cached(&self, key: &str, body: &[u8], ttl: Duration) -> Result<(), StoreError> {
        let (enc, stored) = encode(body);
        if stored.len() > INLINE_LIMIT {
            return Err(StoreError::TooLarge {
                key: key.to_owned(),
                bytes: stored.len(),
                limit: INLINE_LIMIT,
            });
        }
        let item = Item::from([
            ("pk".to_owned(), s(key)),
            ("sk".to_owned(), s(SortKey::HEAD)),
            ("enc".to_owned(), s(enc)),
            (
                "body".to_owned(),
                AttributeValue::B(Blob::new(stored.into_owned())),
            ),
            (
                "expires_at".to_owned(),
                n(self.now_secs().saturating_add(ttl.as_secs())),
            ),
        ]);
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| self.sdk_error("PutItem", key, &e))?;
        Ok(())
    }
}
