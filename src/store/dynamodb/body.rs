//! Where a checkpoint body is stored: inline in its head item, or split into chunk items
//! written in one transaction with the head (see the `dynamodb` module docs), and read back.
//! A write whose condition failed is a conflict unless it was this very write, retried.

use aws_sdk_dynamodb::error::BuildError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValuesOnConditionCheckFailure as OnFailure, TransactWriteItem,
};
use sha2::{Digest, Sha256};

use super::item::{condition, n, s, take_blob, Item};
use super::leases::{shard_of, LEASE_SHARD};
use super::table::DynamoStore;
use crate::aws::TRANSIENT_CODES;
use crate::store::{Lease, SortKey, StoreError};

/// Largest stored body kept in the head item (DynamoDB's item limit is 400 KB with attributes).
pub(super) const INLINE_LIMIT: usize = 350 * 1024;
/// Body bytes per chunk item.
const CHUNK_BYTES: usize = 350 * 1024;
/// Largest stored body one transaction can carry: 4 MB aggregate, minus room for the keys and
/// attributes of the head and the chunks.
const SPLIT_LIMIT: usize = 4 * 1024 * 1024 - 64 * 1024;
/// DynamoDB's item limit per `TransactWriteItems`: the head plus every chunk must fit.
const _: () = assert!(SPLIT_LIMIT.div_ceil(CHUNK_BYTES) < 100);

/// The head fields of one put.
pub(super) struct Written<'a> {
    pub(super) version: u64,
    pub(super) expires_at: u64,
    pub(super) lease: Option<&'a Lease>,
    /// Unique per put call (not per attempt): lets a retried request recognise its own write.
    pub(super) write_id: String,
}

impl DynamoStore {
    /// The head item without its payload.
    pub(super) fn head_item(&self, key: &str, w: &Written<'_>, enc: &str) -> Item {
        let mut item = Item::from([
            ("pk".to_owned(), s(key)),
            ("sk".to_owned(), s(SortKey::HEAD)),
            ("version".to_owned(), n(w.version)),
            ("enc".to_owned(), s(enc)),
            ("expires_at".to_owned(), n(w.expires_at)),
            ("write_id".to_owned(), s(&w.write_id)),
        ]);
        if let Some(lease) = w.lease {
            item.insert("lease_owner".to_owned(), s(&lease.owner));
            item.insert("lease_expires_at".to_owned(), n(lease.expires_at_ms));
            item.insert(LEASE_SHARD.to_owned(), s(&shard_of(key)));
        }
        item
    }

    /// Writes a head item holding its body, conditionally on `expected`.
    pub(super) async fn put_inline(
        &self,
        key: &str,
        expected: u64,
        now: u64,
        head: Item,
        w: &Written<'_>,
    ) -> Result<(), StoreError> {
        let (condition, values) = condition(expected, now);
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(head))
            .condition_expression(condition)
            .set_expression_attribute_values(Some(values))
            .return_values_on_condition_check_failure(OnFailure::AllOld)
            .send()
            .await;
        let Err(err) = result else { return Ok(()) };
        match err.as_service_error() {
            Some(PutItemError::ConditionalCheckFailedException(e)) => {
                own_write_or_conflict(key, expected, e.item(), w)
            }
            _ => Err(self.sdk_error("PutItem", key, &err)),
        }
    }

    /// Writes a head item and its body's chunks in one transaction, conditionally on
    /// `expected`.
    pub(super) async fn put_chunked(
        &self,
        key: &str,
        expected: u64,
        now: u64,
        mut head: Item,
        stored: &[u8],
        w: &Written<'_>,
    ) -> Result<(), StoreError> {
        if stored.len() > SPLIT_LIMIT {
            return Err(StoreError::TooLarge {
                key: key.to_owned(),
                bytes: stored.len(),
                limit: SPLIT_LIMIT,
            });
        }
        let parts = stored.chunks(CHUNK_BYTES);
        head.insert("chunks".to_owned(), n(parts.len() as u64));
        let digest = Sha256::digest(stored).to_vec();
        head.insert("digest".to_owned(), AttributeValue::B(Blob::new(digest)));
        let (condition, values) = condition(expected, now);
        let put = |item| Put::builder().table_name(&self.table).set_item(Some(item));
        let mut items = vec![put(head)
            .condition_expression(condition)
            .set_expression_attribute_values(Some(values))
            .return_values_on_condition_check_failure(OnFailure::AllOld)];
        items.extend(parts.enumerate().map(|(index, part)| {
            put(Item::from([
                ("pk".to_owned(), s(key)),
                ("sk".to_owned(), s(&chunk_sk(w.version, index))),
                ("body".to_owned(), AttributeValue::B(Blob::new(part))),
                ("expires_at".to_owned(), n(w.expires_at)),
            ]))
        }));
        let items = items
            .into_iter()
            .map(|put| Ok(TransactWriteItem::builder().put(put.build()?).build()))
            .collect::<Result<Vec<_>, BuildError>>()
            .map_err(|e| StoreError::Permanent(format!("TransactWriteItems for {key}: {e}")))?;
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await;
        let Err(err) = result else { return Ok(()) };
        let Some(TransactWriteItemsError::TransactionCanceledException(e)) = err.as_service_error()
        else {
            return Err(self.sdk_error("TransactWriteItems", key, &err));
        };
        let reasons = e.cancellation_reasons();
        if let Some(reason) = reasons
            .iter()
            .find(|r| r.code() == Some("ConditionalCheckFailed"))
        {
            return own_write_or_conflict(key, expected, reason.item(), w);
        }
        let codes: Vec<&str> = reasons.iter().map(|r| r.code().unwrap_or("None")).collect();
        let message = format!(
            "dynamodb TransactWriteItems on table {} for {key} cancelled: {codes:?}",
            self.table
        );
        if codes.iter().any(|code| TRANSIENT_CODES.contains(code)) {
            Err(StoreError::Transient(message))
        } else {
            Err(StoreError::Permanent(message))
        }
    }

    /// Reads the `count` chunks of `version`, in order, and checks them against `digest`.
    pub(super) async fn read_chunks(
        &self,
        key: &str,
        version: u64,
        count: u64,
        digest: Option<Vec<u8>>,
    ) -> Result<Vec<u8>, StoreError> {
        let mut stored = Vec::new();
        let mut found = 0u64;
        let mut start = None;
        loop {
            // BETWEEN, not begins_with: a replaced expired item may leave more chunks of the same
            // version behind (TTL deletion is lazy); the head's count is authoritative.
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .consistent_read(true)
                .key_condition_expression("pk = :pk AND sk BETWEEN :first AND :last")
                .expression_attribute_values(":pk", s(key))
                .expression_attribute_values(":first", s(&chunk_sk(version, 0)))
                .expression_attribute_values(":last", s(&chunk_sk(version, count as usize - 1)))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| self.sdk_error("Query", key, &e))?;
            for mut item in page.items.unwrap_or_default() {
                let expected_sk = chunk_sk(version, found as usize);
                if item.get("sk").and_then(|v| v.as_s().ok()) != Some(&expected_sk) {
                    return Err(self.corrupt(key, &format!("missing chunk {expected_sk}")));
                }
                stored.extend(
                    take_blob(&mut item, "body")
                        .ok_or_else(|| self.corrupt(key, "chunk without body"))?,
                );
                found += 1;
            }
            start = page.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        if found != count {
            return Err(self.corrupt(key, &format!("found {found} of {count} chunks")));
        }
        if digest.as_deref() != Some(Sha256::digest(&stored).as_slice()) {
            return Err(self.corrupt(key, "chunk digest mismatch"));
        }
        Ok(stored)
    }
}

/// A failed condition is a conflict unless the current item is this very write, applied by an
/// earlier attempt of the same request whose response was lost and that the SDK then retried.
fn own_write_or_conflict(
    key: &str,
    expected: u64,
    current: Option<&Item>,
    w: &Written<'_>,
) -> Result<(), StoreError> {
    let current_id = current.and_then(|item| item.get("write_id")?.as_s().ok());
    if current_id.is_some_and(|id| *id == w.write_id) {
        Ok(())
    } else {
        Err(StoreError::Conflict {
            key: key.to_owned(),
            expected,
        })
    }
}

/// The sort key of chunk `index` of `version` ([`SortKey::Chunk`]).
fn chunk_sk(version: u64, index: usize) -> String {
    SortKey::Chunk { version, index }.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_keys_sort_by_index_within_one_version_only() {
        assert!(chunk_sk(12, 9) < chunk_sk(12, 10));
        let other = chunk_sk(123, 0);
        assert!(!(chunk_sk(12, 0)..=chunk_sk(12, 99)).contains(&other));
    }
}
