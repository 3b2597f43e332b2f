//! [`ThreadStore`] on the checkpoint table. A thread is one partition, `pk =
//! thread#<digest>#<id>`:
//!
//! - `sk = "head"`: `version` (N), `body` (B, JSON), `expires_at` (N, epoch seconds: the
//!   table's TTL), and `owner` = `threads#<digest>`, `owner_sort` = zero-padded last update
//!   (epoch ms) `#` id, the keys of the `by_owner` index: an owner's threads are one `Query`
//!   on it, newest first, never a scan.
//! - `sk = "turn#<turn, 10 digits>"`: one item per finished turn, written once.
//!
//! A turn is one `PutItem` of its turn item and the conditional head writes; reading a page
//! of turns is one `Query` on the partition. Deleting a thread deletes the head conditionally
//! on its version, then the runs' checkpoint heads (their chunks are unreadable without the
//! head and are left to the TTL) and the turns in `BatchWriteItem`s of 25.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{AttributeValue, DeleteRequest, WriteRequest};

use super::body::INLINE_LIMIT;
use super::item::{condition, n, num, s, take_blob, Item};
use super::pages::query_all;
use super::table::DynamoStore;
use crate::store::thread::sort_key;
use crate::store::{
    HeadWrite, ListedHead, OwnerKey, SortKey, StoreError, StoreKey, StoredHead, ThreadKey,
    ThreadStore, OWNER_INDEX,
};

/// Items per `BatchWriteItem`.
const BATCH: usize = 25;
/// Rounds of resending the unprocessed part of a batch before giving up (transient).
const BATCH_ROUNDS: usize = 5;

fn pk(key: ThreadKey<'_>) -> String {
    StoreKey::Thread(&key.id()).to_string()
}

fn owner(digest: &str) -> String {
    OwnerKey::Threads(digest).to_string()
}

fn turn_sk(turn: u32) -> String {
    SortKey::Turn(turn).to_string()
}

fn secs(ms: u64) -> u64 {
    ms.div_ceil(1_000)
}

impl DynamoStore {
    /// Deletes `keys` (pk, sk) in batches, resending what DynamoDB left unprocessed.
    async fn delete_all(&self, what: &str, keys: Vec<(String, String)>) -> Result<(), StoreError> {
        for batch in keys.chunks(BATCH) {
            let mut requests: Vec<WriteRequest> = batch
                .iter()
                .map(|(pk, sk)| {
                    let delete = DeleteRequest::builder()
                        .key("pk", s(pk))
                        .key("sk", s(sk))
                        .build()
                        .map_err(|e| StoreError::Permanent(format!("DeleteRequest: {e}")))?;
                    Ok(WriteRequest::builder().delete_request(delete).build())
                })
                .collect::<Result<_, StoreError>>()?;
            for _ in 0..BATCH_ROUNDS {
                if requests.is_empty() {
                    break;
                }
                let out = self
                    .client
                    .batch_write_item()
                    .request_items(&self.table, requests)
                    .send()
                    .await
                    .map_err(|e| self.sdk_error("BatchWriteItem", what, &e))?;
                requests = out
                    .unprocessed_items
                    .and_then(|mut m| m.remove(&self.table))
                    .unwrap_or_default();
            }
            if !requests.is_empty() {
                return Err(StoreError::Transient(format!(
                    "dynamodb BatchWriteItem on table {} for {what}: {} deletes left unprocessed",
                    self.table,
                    requests.len()
                )));
            }
        }
        Ok(())
    }

    /// The sort keys of every item in partition `pk` whose sort key starts with `prefix`.
    async fn sort_keys(&self, pk: &str, prefix: &str) -> Result<Vec<String>, StoreError> {
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .expression_attribute_values(":pk", s(pk))
            .expression_attribute_values(":prefix", s(prefix))
            .projection_expression("sk");
        let items = query_all(query)
            .await
            .map_err(|e| self.sdk_error("Query", pk, &e))?;
        Ok(items
            .iter()
            .filter_map(|item| Some(item.get("sk")?.as_s().ok()?.clone()))
            .collect())
    }
}

#[async_trait]
impl ThreadStore for DynamoStore {
    async fn head(&self, key: ThreadKey<'_>) -> Result<Option<StoredHead>, StoreError> {
        let pk = pk(key);
        let Some(mut item) = self.head(&pk, true).await? else {
            return Ok(None);
        };
        if num(&item, "expires_at").is_none_or(|at| at < self.now_secs()) {
            return Ok(None);
        }
        let version = num(&item, "version").ok_or_else(|| self.corrupt(&pk, "no version"))?;
        let body = take_blob(&mut item, "body").ok_or_else(|| self.corrupt(&pk, "no body"))?;
        Ok(Some(StoredHead { version, body }))
    }

    async fn put_head(&self, key: ThreadKey<'_>, write: HeadWrite<'_>) -> Result<u64, StoreError> {
        let pk = pk(key);
        if write.body.len() > INLINE_LIMIT {
            return Err(StoreError::TooLarge {
                key: pk,
                bytes: write.body.len(),
                limit: INLINE_LIMIT,
            });
        }
        let version = write.expected + 1;
        let item = Item::from([
            ("pk".to_owned(), s(&pk)),
            ("sk".to_owned(), s(SortKey::HEAD)),
            ("version".to_owned(), n(version)),
            ("body".to_owned(), AttributeValue::B(Blob::new(write.body))),
            ("expires_at".to_owned(), n(secs(write.expires_at_ms))),
            ("owner".to_owned(), s(&owner(key.owner))),
            (
                "owner_sort".to_owned(),
                s(&sort_key(write.updated_ms, key.thread_id)),
            ),
        ]);
        let (condition, values) = condition(write.expected, self.now_secs());
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(condition)
            .set_expression_attribute_values(Some(values))
            .send()
            .await;
        match result {
            Ok(_) => Ok(version),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Err(StoreError::Conflict {
                    key: pk,
                    expected: write.expected,
                })
            }
            Err(err) => Err(self.sdk_error("PutItem", &pk, &err)),
        }
    }

    async fn put_turn(
        &self,
        key: ThreadKey<'_>,
        turn: u32,
        body: &[u8],
        expires_at_ms: u64,
    ) -> Result<(), StoreError> {
        let pk = pk(key);
        let item = Item::from([
            ("pk".to_owned(), s(&pk)),
            ("sk".to_owned(), s(&turn_sk(turn))),
            ("body".to_owned(), AttributeValue::B(Blob::new(body))),
            ("expires_at".to_owned(), n(secs(expires_at_ms))),
        ]);
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| self.sdk_error("PutItem", &pk, &e))?;
        Ok(())
    }

    async fn turns(
        &self,
        key: ThreadKey<'_>,
        after: u32,
        last: u32,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let pk = pk(key);
        if after >= last || limit == 0 {
            return Ok(Vec::new());
        }
        let now = self.now_secs();
        let page = self
            .client
            .query()
            .table_name(&self.table)
            .consistent_read(true)
            .key_condition_expression("pk = :pk AND sk BETWEEN :first AND :last")
            .expression_attribute_values(":pk", s(&pk))
            .expression_attribute_values(":first", s(&turn_sk(after + 1)))
            .expression_attribute_values(":last", s(&turn_sk(last)))
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(|e| self.sdk_error("Query", &pk, &e))?;
        Ok(page
            .items
            .unwrap_or_default()
            .into_iter()
            .filter(|item| num(item, "expires_at").is_some_and(|at| at >= now))
            .filter_map(|mut item| take_blob(&mut item, "body"))
            .collect())
    }

    async fn list(
        &self,
        digest: &str,
        limit: usize,
        after: Option<&str>,
    ) -> Result<Vec<ListedHead>, StoreError> {
        let owner = owner(digest);
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(OWNER_INDEX)
            .scan_index_forward(false)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .expression_attribute_values(":owner", s(&owner));
        query = match after {
            Some(after) => query
                .key_condition_expression("#o = :owner AND owner_sort < :after")
                .expression_attribute_values(":after", s(after)),
            None => query.key_condition_expression("#o = :owner"),
        };
        let page = query
            .expression_attribute_names("#o", "owner")
            .send()
            .await
            .map_err(|e| self.sdk_error("Query", &owner, &e))?;
        let now = self.now_secs();
        Ok(page
            .items
            .unwrap_or_default()
            .into_iter()
            .filter(|item| num(item, "expires_at").is_some_and(|at| at >= now))
            .filter_map(|mut item: HashMap<String, AttributeValue>| {
                let sort = item.get("owner_sort")?.as_s().ok()?.clone();
                let body = take_blob(&mut item, "body")?;
                Some(ListedHead { sort, body })
            })
            .collect())
    }

    async fn delete(
        &self,
        key: ThreadKey<'_>,
        expected: u64,
        _turns: u32,
        runs: &[String],
    ) -> Result<(), StoreError> {
        let pk = pk(key);
        let result = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(&pk))
            .key("sk", s(SortKey::HEAD))
            .condition_expression("version = :expected")
            .expression_attribute_values(":expected", n(expected))
            .send()
            .await;
        if let Err(err) = result {
            return Err(match err.as_service_error() {
                Some(DeleteItemError::ConditionalCheckFailedException(_)) => {
                    StoreError::Conflict { key: pk, expected }
                }
                _ => self.sdk_error("DeleteItem", &pk, &err),
            });
        }
        let run_heads = runs
            .iter()
            .map(|run_id| (StoreKey::Run(run_id).to_string(), SortKey::HEAD.to_owned()))
            .collect();
        self.delete_all(&pk, run_heads).await?;
        // Every turn item of the partition, whatever the head counted (a turn written by a
        // finish that lost its head write is deleted too).
        let turns = self.sort_keys(&pk, SortKey::TURNS).await?;
        self.delete_all(&pk, turns.into_iter().map(|sk| (pk.clone(), sk)).collect())
            .await
    }
}
