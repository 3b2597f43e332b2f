//! [`SyncRecords`] on DynamoDB (`SYNC_TABLE`: `pk`/`sk` strings, as the checkpoint table), all
//! under one partition per destination, `pk =` [`StoreKey::Sync`]:
//!
//! | `sk` ([`SyncSortKey`]) | holds |
//! |---|---|
//! | `doc#KEY` | one source object: `object_version`, `sequencer`, `phase`, bytes `hash`, `reason` (JSON), `attempts`, `lease_until`; `rev` for conditional writes |
//! | `control` | the publish lease (`lease_until`, `lease_owner`), `scheduled`, `changes`, `published_changes`, `publishes`, `version`, passage counters |
//! | `job#N` | publish N: `started_at`, `finished_at`, `summary` (JSON) |
//!
//! The records never expire (no `expires_at`).

use super::item::{n, num, s, Item};
use super::pages::query_all;
use super::table::DynamoStore;
use crate::store::key::SyncSortKey;
use crate::store::sync_records::{
    DocPhase, DocRecord, JobRecord, PublishEnd, SyncControl, SyncRecords,
};
use crate::store::{StoreError, StoreKey};
use async_trait::async_trait;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use std::collections::HashMap;

fn key(dest: &str, sort: SyncSortKey<'_>) -> Item {
    HashMap::from([
        ("pk".into(), s(&StoreKey::Sync(dest).to_string())),
        ("sk".into(), s(&sort.to_string())),
    ])
}

fn text(item: &Item, name: &str) -> String {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .cloned()
        .unwrap_or_default()
}

fn count(item: &Item, name: &str) -> u64 {
    num(item, name).unwrap_or(0)
}

fn is_condition_failure<E: ProvideErrorMetadata>(e: &E) -> bool {
    e.code() == Some("ConditionalCheckFailedException")
}

impl DynamoStore {
    /// The control record of `dest`, as an `UpdateItem` on it.
    fn update_control(
        &self,
        dest: &str,
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(dest, SyncSortKey::Control)))
    }

    /// Every item of `dest` whose sort key starts with `prefix`, strongly consistent.
    async fn sync_items(&self, dest: &str, prefix: &str) -> Result<Vec<Item>, StoreError> {
        let pk = StoreKey::Sync(dest).to_string();
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .expression_attribute_values(":pk", s(&pk))
            .expression_attribute_values(":prefix", s(prefix))
            .consistent_read(true);
        query_all(query)
            .await
            .map_err(|e| self.sdk_error("Query", &pk, &e))
    }
}

#[async_trait]
impl SyncRecords for DynamoStore {
    async fn doc(&self, dest: &str, rel: &str) -> Result<Option<DocRecord>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key(dest, SyncSortKey::Doc(rel))))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| self.sdk_error("GetItem", dest, &e))?;
        Ok(out.item.as_ref().and_then(doc_of))
    }

    async fn docs(&self, dest: &str) -> Result<Vec<DocRecord>, StoreError> {
        let items = self.sync_items(dest, SyncSortKey::DOCS).await?;
        Ok(items.iter().filter_map(doc_of).collect())
    }

    async fn put_doc(
        &self,
        dest: &str,
        record: &DocRecord,
        expected: Option<u64>,
    ) -> Result<bool, StoreError> {
        let mut item = key(dest, SyncSortKey::Doc(&record.rel));
        item.insert("object_version".into(), s(&record.object_version));
        item.insert("sequencer".into(), s(&record.sequencer));
        item.insert("phase".into(), s(record.phase.as_str()));
        item.insert("hash".into(), s(&record.hash));
        item.insert("attempts".into(), n(u64::from(record.attempts)));
        item.insert("lease_until".into(), n(record.lease_until));
        item.insert("rev".into(), n(record.rev + 1));
        if let Some(reason) = &record.reason_json {
            item.insert("reason".into(), s(reason));
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
            Err(e) => Err(self.sdk_error("PutItem", dest, &e)),
        }
    }

    async fn control(&self, dest: &str) -> Result<SyncControl, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key(dest, SyncSortKey::Control)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| self.sdk_error("GetItem", dest, &e))?;
        Ok(out.item.as_ref().map(control_of).unwrap_or_default())
    }

    async fn count_change(&self, dest: &str, embedded: u64, cached: u64) -> Result<(), StoreError> {
        self.update_control(dest)
            .update_expression("ADD changes :one, embedded :e, cached :c")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":e", n(embedded))
            .expression_attribute_values(":c", n(cached))
            .send()
            .await
            .map_err(|e| self.sdk_error("UpdateItem", dest, &e))?;
        Ok(())
    }

    async fn schedule(&self, dest: &str) -> Result<bool, StoreError> {
        let out = self
            .update_control(dest)
            .update_expression("SET scheduled = :t")
            .condition_expression("attribute_not_exists(scheduled) OR scheduled = :f")
            .expression_attribute_values(":t", AttributeValue::Bool(true))
            .expression_attribute_values(":f", AttributeValue::Bool(false))
            .send()
            .await;
        match out {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(is_condition_failure) => Ok(false),
            Err(e) => Err(self.sdk_error("UpdateItem", dest, &e)),
        }
    }

    async fn unschedule(&self, dest: &str) -> Result<(), StoreError> {
        self.update_control(dest)
            .update_expression("SET scheduled = :f")
            .expression_attribute_values(":f", AttributeValue::Bool(false))
            .send()
            .await
            .map_err(|e| self.sdk_error("UpdateItem", dest, &e))?;
        Ok(())
    }

    async fn take_publish_lease(
        &self,
        dest: &str,
        owner: &str,
        now: u64,
        until: u64,
    ) -> Result<Option<SyncControl>, StoreError> {
        let out = self
            .update_control(dest)
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
            Err(e) => Err(self.sdk_error("UpdateItem", dest, &e)),
        }
    }

    async fn finish_publish(
        &self,
        dest: &str,
        owner: &str,
        end: PublishEnd<'_>,
    ) -> Result<bool, StoreError> {
        let mut update = String::from(
            "SET published_changes = :c, published_embedded = :e, published_cached = :k \
             REMOVE lease_until, lease_owner",
        );
        let mut req = self
            .update_control(dest)
            .condition_expression("lease_owner = :me")
            .expression_attribute_values(":me", s(owner))
            .expression_attribute_values(":c", n(end.taken.changes))
            .expression_attribute_values(":e", n(end.taken.embedded))
            .expression_attribute_values(":k", n(end.taken.cached));
        if let Some(version) = end.version {
            update = update.replacen("SET ", "SET version = :v, ", 1);
            req = req.expression_attribute_values(":v", s(version));
        }
        if end.published {
            update.push_str(" ADD publishes :one");
            req = req.expression_attribute_values(":one", n(1));
        }
        match req.update_expression(update).send().await {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(is_condition_failure) => Ok(false),
            Err(e) => Err(self.sdk_error("UpdateItem", dest, &e)),
        }
    }

    async fn put_job(&self, dest: &str, record: &JobRecord) -> Result<(), StoreError> {
        let mut item = key(dest, SyncSortKey::Job(record.number));
        item.insert("started_at".into(), n(record.started_at));
        item.insert("finished_at".into(), n(record.finished_at));
        item.insert("summary".into(), s(&record.summary_json));
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| self.sdk_error("PutItem", dest, &e))?;
        Ok(())
    }

    async fn jobs(&self, dest: &str) -> Result<Vec<JobRecord>, StoreError> {
        let items = self.sync_items(dest, SyncSortKey::JOBS).await?;
        Ok(items
            .iter()
            .filter_map(|item| {
                Some(JobRecord {
                    number: SyncSortKey::job_of(&text(item, "sk"))?,
                    started_at: count(item, "started_at"),
                    finished_at: count(item, "finished_at"),
                    summary_json: text(item, "summary"),
                })
            })
            .collect())
    }
}

fn doc_of(item: &Item) -> Option<DocRecord> {
    let rel = SyncSortKey::doc_of(&text(item, "sk"))?.to_owned();
    Some(DocRecord {
        rel,
        object_version: text(item, "object_version"),
        sequencer: text(item, "sequencer"),
        phase: DocPhase::parse(&text(item, "phase"))?,
        hash: text(item, "hash"),
        reason_json: item.get("reason").and_then(|v| v.as_s().ok()).cloned(),
        attempts: u32::try_from(count(item, "attempts")).unwrap_or(u32::MAX),
        lease_until: count(item, "lease_until"),
        rev: count(item, "rev"),
    })
}

fn control_of(item: &Item) -> SyncControl {
    SyncControl {
        changes: count(item, "changes"),
        published_changes: count(item, "published_changes"),
        publishes: count(item, "publishes"),
        version: item.get("version").and_then(|v| v.as_s().ok()).cloned(),
        embedded: count(item, "embedded"),
        cached: count(item, "cached"),
        published_embedded: count(item, "published_embedded"),
        published_cached: count(item, "published_cached"),
    }
}
