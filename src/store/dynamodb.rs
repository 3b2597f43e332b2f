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
//! Cache items ([`super::CacheStore`]) live in the same table; their layout is in `cache`.
//! Leased head items also carry `lease_shard`, which lists them in the sparse GSI `leases`
//! the sweeper queries ([`super::LeaseIndex`], in `leases`). Head items an indexer lists carry
//! `owner`, `owner_sort` and `listed_status`, listed by the GSI `by_owner` (in `owner`).

mod cache;
mod head;
mod leases;
mod owner;
mod rate;
mod thread;

pub use leases::{LEASE_INDEX, LEASE_SHARD, LEASE_SHARDS};

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::error::{BuildError, DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValuesOnConditionCheckFailure as OnFailure, TransactWriteItem,
};
use aws_sdk_dynamodb::Client;
use sha2::{Digest, Sha256};

use super::{CheckpointStore, Indexer, Lease, ListPage, StoreError, Versioned};
use crate::aws::{sdk_error_class, TRANSIENT_CODES};
use crate::clock::{Clock, SystemClock};
use crate::error::ErrorClass;

type Item = HashMap<String, AttributeValue>;

/// Bodies larger than this are gzip-compressed (kept raw if gzip does not make them smaller).
const COMPRESS_ABOVE: usize = 8 * 1024;
/// Largest stored body kept in the head item (DynamoDB's item limit is 400 KB with attributes).
const INLINE_LIMIT: usize = 350 * 1024;
/// Body bytes per chunk item.
const CHUNK_BYTES: usize = 350 * 1024;
/// Largest stored body one transaction can carry: 4 MB aggregate, minus room for the keys and
/// attributes of the head and the chunks.
const SPLIT_LIMIT: usize = 4 * 1024 * 1024 - 64 * 1024;
/// DynamoDB's item limit per `TransactWriteItems`: the head plus every chunk must fit.
const _: () = assert!(SPLIT_LIMIT.div_ceil(CHUNK_BYTES) < 100);

const HEAD: &str = "head";
/// [`CheckpointStore`] on one DynamoDB table (see the module docs for the item layout).
///
/// Build the SDK client once per process (with [`DynamoStore::client_config`]) and share it.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    ttl: Duration,
    /// "Now" for `expires_at` (written and checked).
    clock: Arc<dyn Clock>,
    /// What head items are listed under in the `by_owner` index; none listed without.
    indexer: Option<Arc<dyn Indexer>>,
}

/// The head fields of one put.
struct Written<'a> {
    version: u64,
    expires_at: u64,
    lease: Option<&'a Lease>,
    /// Unique per put call (not per attempt): lets a retried request recognise its own write.
    write_id: String,
}

impl DynamoStore {
    /// A store on `table`; every write sets `expires_at` to now + `ttl`.
    pub fn new(client: Client, table: String, ttl: Duration) -> Self {
        Self {
            client,
            table,
            ttl,
            clock: Arc::new(SystemClock),
            indexer: None,
        }
    }

    /// The same store listing head items in the `by_owner` index through `indexer`.
    pub fn with_indexer(mut self, indexer: Arc<dyn Indexer>) -> Self {
        self.indexer = Some(indexer);
        self
    }

    /// The same store reading "now" from `clock` for its TTLs.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Epoch seconds, the unit of `expires_at`.
    fn now_secs(&self) -> u64 {
        self.clock.now_secs()
    }

    /// SDK client configuration for this store: `sdk_config` with standard-mode retries (the
    /// infrastructure retry layer: nothing above it should retry the same call again) and
    /// `operation_timeout` bounding one call including its retries (the app uses
    /// [`crate::aws::run_call_timeout`]: a write started at the usable deadline still ends
    /// before the Lambda deadline).
    pub fn client_config(
        sdk_config: &aws_config::SdkConfig,
        operation_timeout: Duration,
    ) -> aws_sdk_dynamodb::Config {
        let timeouts = crate::aws::timeouts(sdk_config, operation_timeout);
        aws_sdk_dynamodb::config::Builder::from(sdk_config)
            .retry_config(RetryConfig::standard())
            .timeout_config(timeouts)
            .build()
    }

    /// The head item without its payload.
    fn head_item(&self, key: &str, w: &Written<'_>, enc: &str) -> Item {
        let mut item = Item::from([
            ("pk".to_owned(), s(key)),
            ("sk".to_owned(), s(HEAD)),
            ("version".to_owned(), n(w.version)),
            ("enc".to_owned(), s(enc)),
            ("expires_at".to_owned(), n(w.expires_at)),
            ("write_id".to_owned(), s(&w.write_id)),
        ]);
        if let Some(lease) = w.lease {
            item.insert("lease_owner".to_owned(), s(&lease.owner));
            item.insert("lease_expires_at".to_owned(), n(lease.expires_at_ms));
            item.insert(LEASE_SHARD.to_owned(), s(&leases::shard_of(key)));
        }
        item
    }

    async fn put_inline(
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

    async fn put_chunked(
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
    async fn read_chunks(
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

    fn sdk_error<E>(
        &self,
        operation: &str,
        key: &str,
        err: &SdkError<E, HttpResponse>,
    ) -> StoreError
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        let message = format!(
            "dynamodb {operation} on table {} for {key}: {}",
            self.table,
            DisplayErrorContext(err)
        );
        match sdk_error_class(err) {
            ErrorClass::Transient => StoreError::Transient(message),
            ErrorClass::Permanent => StoreError::Permanent(message),
        }
    }

    fn corrupt(&self, key: &str, what: &str) -> StoreError {
        StoreError::Permanent(format!(
            "corrupt checkpoint {key} in table {}: {what}",
            self.table
        ))
    }
}

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
        status: Option<&str>,
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

/// Condition for writing over version `expected` at `now` (epoch seconds). An expired item is
/// absent for writers exactly as it is for readers.
fn condition(expected: u64, now: u64) -> (&'static str, Item) {
    let mut values = Item::from([(":now".to_owned(), n(now))]);
    if expected == 0 {
        ("attribute_not_exists(pk) OR expires_at < :now", values)
    } else {
        values.insert(":expected".to_owned(), n(expected));
        ("version = :expected AND expires_at >= :now", values)
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

/// The `enc` value and the bytes to store: gzip when the body is over [`COMPRESS_ABOVE`] and
/// gzip makes it smaller.
fn encode(body: &[u8]) -> (&'static str, Cow<'_, [u8]>) {
    if body.len() <= COMPRESS_ABOVE {
        return ("raw", Cow::Borrowed(body));
    }
    let mut gz = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4),
        flate2::Compression::default(),
    );
    match gz.write_all(body).and_then(|()| gz.finish()) {
        Ok(zipped) if zipped.len() < body.len() => ("gzip", Cow::Owned(zipped)),
        _ => ("raw", Cow::Borrowed(body)),
    }
}

/// The body from stored bytes; `None` for an unknown `enc`.
fn decode(enc: &str, stored: Vec<u8>) -> Option<std::io::Result<Vec<u8>>> {
    match enc {
        "raw" => Some(Ok(stored)),
        "gzip" => {
            let mut body = Vec::with_capacity(stored.len() * 4);
            let read = flate2::read::GzDecoder::new(stored.as_slice()).read_to_end(&mut body);
            Some(read.map(|_| body))
        }
        _ => None,
    }
}

/// Zero-padded so chunks sort by index and one version's range never overlaps another's.
fn chunk_sk(version: u64, index: usize) -> String {
    format!("chunk#{version:020}#{index:04}")
}

fn lease_of(item: &Item) -> Option<Lease> {
    let owner = item.get("lease_owner")?.as_s().ok()?.clone();
    Some(Lease {
        owner,
        expires_at_ms: num(item, "lease_expires_at")?,
    })
}

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn num(item: &Item, name: &str) -> Option<u64> {
    item.get(name)?.as_n().ok()?.parse().ok()
}

fn take_blob(item: &mut Item, name: &str) -> Option<Vec<u8>> {
    match item.remove(name)? {
        AttributeValue::B(blob) => Some(blob.into_inner()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_only_when_large_and_smaller() {
        assert_eq!(encode(b"{}"), ("raw", Cow::Borrowed(&b"{}"[..])));
        let text = b"checkpoint ".repeat(2_000);
        let (enc, stored) = encode(&text);
        assert!(enc == "gzip" && stored.len() < text.len() / 10);
        assert_eq!(decode(enc, stored.into_owned()).unwrap().unwrap(), text);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let noise: Vec<u8> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect();
        assert_eq!(encode(&noise).0, "raw");
        assert!(decode("zstd", Vec::new()).is_none());
    }

    #[test]
    fn chunk_keys_sort_by_index_within_one_version_only() {
        assert!(chunk_sk(12, 9) < chunk_sk(12, 10));
        let other = chunk_sk(123, 0);
        assert!(!(chunk_sk(12, 0)..=chunk_sk(12, 99)).contains(&other));
    }
}
