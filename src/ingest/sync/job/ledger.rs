//! The sync function's records in DynamoDB (`SYNC_TABLE`: `pk`/`sk` strings, as the
//! checkpoint table), all under one partition per destination, `pk = sync#s3://BUCKET/PREFIX`:
//!
//! | `sk` | holds |
//! |---|---|
//! | `doc#KEY` | one source object: the write it reflects (`object_version`, `sequencer`), its [`DocPhase`], bytes hash, typed failure, attempts, a processing lease; `rev` for conditional writes |
//! | `control` | the publish lease (`lease_until`, `lease_owner`), `scheduled`, `changes` (every recorded document change counts one), `published_changes` (what the last publish consumed), `publishes`, `version`, passage counters |
//! | `job#N` | the statistics of publish N (a `SyncSummary`), its start and end |
//!
//! Every write that decides something is conditional (`rev`, the lease), so a redelivered
//! message or a second invocation can never record a document twice or publish concurrently.
use super::error::JobError;
use crate::ingest::sync::{FailReason, SyncSummary};
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use std::collections::HashMap;

type Item = HashMap<String, AttributeValue>;

/// Where a document is in its sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocPhase {
    /// An invocation holds it (until `lease_until`).
    Processing,
    /// Read (or skipped for one of ingest's reasons) and its passages embedded.
    Done,
    /// Its reader failed; typed reason recorded. Never retried until it changes.
    Failed,
    /// Removed from the source.
    Deleted,
}

impl DocPhase {
    fn as_str(self) -> &'static str {
        match self {
            Self::Processing => "processing",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Deleted => "deleted",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "processing" => Self::Processing,
            "done" => Self::Done,
            "failed" => Self::Failed,
            "deleted" => Self::Deleted,
            _ => return None,
        })
    }
}

/// One document's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocRecord {
    /// The key relative to the source prefix.
    pub rel: String,
    /// The write it reflects.
    pub object_version: String,
    /// S3's event order on the key (hex; may be empty).
    pub sequencer: String,
    /// Where it is.
    pub phase: DocPhase,
    /// SHA-256 of its bytes (hex) once read.
    pub hash: String,
    /// Why it failed.
    pub reason: Option<FailReason>,
    /// Claims of this write so far.
    pub attempts: u32,
    /// The processing lease's end (epoch ms).
    pub lease_until: u64,
    /// Bumped by every write; writes are conditional on it.
    pub rev: u64,
}

/// The control item.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Control {
    /// Document changes recorded so far.
    pub changes: u64,
    /// `changes` as of the last publish.
    pub published_changes: u64,
    /// Publishes so far.
    pub publishes: u64,
    /// The version last published.
    pub version: Option<String>,
    /// Passages embedded so far.
    pub embedded: u64,
    /// Passages served by the cache so far.
    pub cached: u64,
    /// `embedded` as of the last publish.
    pub published_embedded: u64,
    /// `cached` as of the last publish.
    pub published_cached: u64,
}

/// A finished publish's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRecord {
    /// 1, 2, ...
    pub number: u64,
    /// When it took the lease (epoch ms).
    pub started_at: u64,
    /// When it ended (epoch ms).
    pub finished_at: u64,
    /// The statistics.
    pub summary: SyncSummary,
}

/// The records of one destination.
#[derive(Debug, Clone)]
pub struct Ledger {
    client: aws_sdk_dynamodb::Client,
    table: String,
    pk: String,
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}
fn n(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}
fn get_s(item: &Item, k: &str) -> String {
    item.get(k)
        .and_then(|v| v.as_s().ok())
        .cloned()
        .unwrap_or_default()
}
fn get_n(item: &Item, k: &str) -> u64 {
    item.get(k)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn is_condition_failure<E: aws_sdk_dynamodb::error::ProvideErrorMetadata>(e: &E) -> bool {
    e.code() == Some("ConditionalCheckFailedException")
}

impl Ledger {
    /// The records of destination `dest` (an `s3://` URL) in `table`.
    pub fn new(client: aws_sdk_dynamodb::Client, table: String, dest: &str) -> Self {
        Self {
            client,
            table,
            pk: format!("sync#{dest}"),
        }
    }

    fn key(&self, sk: &str) -> Item {
        HashMap::from([("pk".into(), s(&self.pk)), ("sk".into(), s(sk))])
    }

    /// The record of `rel`, read strongly consistent.
    pub async fn doc(&self, rel: &str) -> Result<Option<DocRecord>, JobError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(self.key(&format!("doc#{rel}"))))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| JobError::sdk("GetItem", e))?;
        Ok(out.item.as_ref().and_then(doc_of))
    }

    /// Every document record (strongly consistent pages).
    pub async fn docs(&self) -> Result<Vec<DocRecord>, JobError> {
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND begins_with(sk, :doc)")
                .expression_attribute_values(":pk", s(&self.pk))
                .expression_attribute_values(":doc", s("doc#"))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| JobError::sdk("Query", e))?;
            out.extend(page.items().iter().filter_map(doc_of));
            start = page.last_evaluated_key;
            if start.is_none() {
                return Ok(out);
            }
        }
    }

    /// Writes `record` (rev + 1) if nobody wrote the document since `expected` was read;
    /// `Ok(false)` when someone did.
    pub(crate) async fn put_doc(
        &self,
        record: &DocRecord,
        expected: Option<u64>,
    ) -> Result<bool, JobError> {
        let mut item = self.key(&format!("doc#{}", record.rel));
        item.insert("object_version".into(), s(&record.object_version));
        item.insert("sequencer".into(), s(&record.sequencer));
        item.insert("phase".into(), s(record.phase.as_str()));
        item.insert("hash".into(), s(&record.hash));
        item.insert("attempts".into(), n(u64::from(record.attempts)));
        item.insert("lease_until".into(), n(record.lease_until));
        item.insert("rev".into(), n(record.rev + 1));
        if let Some(reason) = &record.reason {
            let json = serde_json::to_string(reason).expect("reason serializes");
            item.insert("reason".into(), s(json));
        }
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item));
        put = match expected {
            None => put.condition_expression("attribute_not_exists(pk)"),
            Some(rev) => put
                .condition_expression("rev = :rev")
                .expression_attribute_values(":rev", n(rev)),
        };
        match put.send().await {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(is_condition_failure) => Ok(false),
            Err(e) => Err(JobError::sdk("PutItem", e)),
        }
    }

    /// The control item.
    pub async fn control(&self) -> Result<Control, JobError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(self.key("control")))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| JobError::sdk("GetItem", e))?;
        Ok(out.item.as_ref().map(control_of).unwrap_or_default())
    }

    /// Counts one recorded document change and the passages it embedded or found cached.
    pub(crate) async fn count_change(&self, embedded: u64, cached: u64) -> Result<(), JobError> {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.key("control")))
            .update_expression("ADD changes :one, embedded :e, cached :c")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":e", n(embedded))
            .expression_attribute_values(":c", n(cached))
            .send()
            .await
            .map_err(|e| JobError::sdk("UpdateItem", e))?;
        Ok(())
    }

    /// Marks a publish as scheduled; `Ok(true)` when this call did (and must send the
    /// message), `Ok(false)` when one already is.
    pub(crate) async fn schedule(&self) -> Result<bool, JobError> {
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.key("control")))
            .update_expression("SET scheduled = :t")
            .condition_expression("attribute_not_exists(scheduled) OR scheduled = :f")
            .expression_attribute_values(":t", AttributeValue::Bool(true))
            .expression_attribute_values(":f", AttributeValue::Bool(false))
            .send()
            .await;
        match out {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(is_condition_failure) => Ok(false),
            Err(e) => Err(JobError::sdk("UpdateItem", e)),
        }
    }

    /// Un-marks a publish as scheduled (its message could not be sent).
    pub(crate) async fn unschedule(&self) -> Result<(), JobError> {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.key("control")))
            .update_expression("SET scheduled = :f")
            .expression_attribute_values(":f", AttributeValue::Bool(false))
            .send()
            .await
            .map_err(|e| JobError::sdk("UpdateItem", e))?;
        Ok(())
    }

    /// Takes the publish lease until `until` (epoch ms) if none is live at `now`, clearing
    /// `scheduled` (changes from here on schedule another publish). The control item as
    /// taken, or `None` when another publish holds the lease.
    pub(crate) async fn take_publish_lease(
        &self,
        owner: &str,
        now: u64,
        until: u64,
    ) -> Result<Option<Control>, JobError> {
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.key("control")))
            .update_expression("SET lease_until = :until, lease_owner = :me, scheduled = :f")
            .condition_expression("attribute_not_exists(lease_until) OR lease_until < :now")
            .expression_attribute_values(":until", n(until))
            .expression_attribute_values(":me", s(owner))
            .expression_attribute_values(":f", AttributeValue::Bool(false))
            .expression_attribute_values(":now", n(now))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        match out {
            Ok(out) => Ok(Some(
                out.attributes.as_ref().map(control_of).unwrap_or_default(),
            )),
            Err(e) if e.as_service_error().is_some_and(is_condition_failure) => Ok(None),
            Err(e) => Err(JobError::sdk("UpdateItem", e)),
        }
    }

    /// Records a finished publish (`published` = whether the pointer moved) and releases the
    /// lease, if `owner` still holds it.
    pub(crate) async fn finish_publish(
        &self,
        owner: &str,
        taken: &Control,
        version: Option<&str>,
        published: bool,
    ) -> Result<(), JobError> {
        let mut update = String::from(
            "SET published_changes = :c, published_embedded = :e, published_cached = :k \
             REMOVE lease_until, lease_owner",
        );
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.key("control")))
            .condition_expression("lease_owner = :me")
            .expression_attribute_values(":me", s(owner))
            .expression_attribute_values(":c", n(taken.changes))
            .expression_attribute_values(":e", n(taken.embedded))
            .expression_attribute_values(":k", n(taken.cached));
        if let Some(version) = version {
            update = update.replacen("SET ", "SET version = :v, ", 1);
            req = req.expression_attribute_values(":v", s(version));
        }
        if published {
            update.push_str(" ADD publishes :one");
            req = req.expression_attribute_values(":one", n(1));
        }
        match req.update_expression(update).send().await {
            Ok(_) => Ok(()),
            Err(e) if e.as_service_error().is_some_and(is_condition_failure) => Err(
                JobError::Transient("the publish lease lapsed before the publish ended".into()),
            ),
            Err(e) => Err(JobError::sdk("UpdateItem", e)),
        }
    }

    /// Stores job `record`.
    pub(crate) async fn put_job(&self, record: &JobRecord) -> Result<(), JobError> {
        let mut item = self.key(&format!("job#{:010}", record.number));
        item.insert("started_at".into(), n(record.started_at));
        item.insert("finished_at".into(), n(record.finished_at));
        let json = serde_json::to_string(&record.summary).expect("summary serializes");
        item.insert("summary".into(), s(json));
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| JobError::sdk("PutItem", e))?;
        Ok(())
    }

    /// Every job, oldest first.
    pub async fn jobs(&self) -> Result<Vec<JobRecord>, JobError> {
        let page = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :job)")
            .expression_attribute_values(":pk", s(&self.pk))
            .expression_attribute_values(":job", s("job#"))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| JobError::sdk("Query", e))?;
        Ok(page
            .items()
            .iter()
            .filter_map(|item| {
                let number = get_s(item, "sk").strip_prefix("job#")?.parse().ok()?;
                Some(JobRecord {
                    number,
                    started_at: get_n(item, "started_at"),
                    finished_at: get_n(item, "finished_at"),
                    summary: serde_json::from_str(&get_s(item, "summary")).ok()?,
                })
            })
            .collect())
    }
}

fn doc_of(item: &Item) -> Option<DocRecord> {
    let rel = get_s(item, "sk").strip_prefix("doc#")?.to_owned();
    let reason = item
        .get("reason")
        .and_then(|v| v.as_s().ok())
        .and_then(|json| serde_json::from_str(json).ok());
    Some(DocRecord {
        rel,
        object_version: get_s(item, "object_version"),
        sequencer: get_s(item, "sequencer"),
        phase: DocPhase::parse(&get_s(item, "phase"))?,
        hash: get_s(item, "hash"),
        reason,
        attempts: get_n(item, "attempts") as u32,
        lease_until: get_n(item, "lease_until"),
        rev: get_n(item, "rev"),
    })
}

fn control_of(item: &Item) -> Control {
    Control {
        changes: get_n(item, "changes"),
        published_changes: get_n(item, "published_changes"),
        publishes: get_n(item, "publishes"),
        version: item.get("version").and_then(|v| v.as_s().ok()).cloned(),
        embedded: get_n(item, "embedded"),
        cached: get_n(item, "cached"),
        published_embedded: get_n(item, "published_embedded"),
        published_cached: get_n(item, "published_cached"),
    }
}
