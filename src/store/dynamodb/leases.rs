//! [`LeaseIndex`] on the checkpoint table: a sparse global secondary index, no scan.
//!
//! Every head item written with a lease also carries `lease_shard` (S, `"0"`..`"7"`: a hash
//! of the key), so it appears in the GSI [`LEASE_INDEX`] (partition key `lease_shard`, sort
//! key `lease_expires_at` N, projecting `lease_owner`, `requeued_for`, `requeued_at`). A
//! write without a lease drops both attributes and the item leaves the index. The sweeper
//! asks each shard for `lease_expires_at < now`, oldest first, filtering out items already
//! marked for their current lease; so finished runs cost nothing and a sweep reads only what
//! lapsed.
//!
//! Cost: an index write only when a projected or key attribute changes: when a lease is
//! taken, released or marked, not on the per-step writes in between (same lease). Eight
//! shards keep any one index partition far below DynamoDB's per-partition write limit; a
//! sweep is eight queries (0.5 RCU each when nothing lapsed). The index is eventually
//! consistent; the re-queue claim is a conditional `UpdateItem` on the table itself
//! (`requeued_for` = the lease owner, `requeued_at` in epoch ms, `requeued_by` = a claim id
//! that lets a retried claim whose answer was lost recognise its own mark), so a stale index
//! entry can never cause a second message. The next checkpoint write replaces the item and drops the
//! mark with the lease it was for.

use async_trait::async_trait;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;
use sha2::{Digest, Sha256};

use super::item::{n, num, s, Item};
use super::table::DynamoStore;
use crate::store::{Lapsed, LapsedLease, Lease, LeaseIndex, SortKey, StoreError};

/// Name of the sparse GSI listing leased items (`template.yaml`, `infra/local/provision.py`).
pub const LEASE_INDEX: &str = "leases";
/// Partition key of [`LEASE_INDEX`], present only on leased items.
pub const LEASE_SHARD: &str = "lease_shard";
/// Number of [`LEASE_SHARD`] values.
pub const LEASE_SHARDS: u8 = 8;
/// Pages read per shard and sweep, at most (a bound on one sweep's work).
const MAX_PAGES: usize = 20;

/// The shard of `key`: stable, spread evenly by SHA-256.
pub(super) fn shard_of(key: &str) -> String {
    let digest = Sha256::digest(key.as_bytes());
    (digest[0] % LEASE_SHARDS).to_string()
}

impl DynamoStore {
    /// Up to `limit` lapsed, unmarked leases of one shard, oldest first.
    async fn lapsed_in(
        &self,
        shard: String,
        now_ms: u64,
        stale_before_ms: u64,
        limit: usize,
    ) -> Result<Vec<LapsedLease>, StoreError> {
        let mut found = Vec::new();
        let mut start = None;
        for _ in 0..MAX_PAGES {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(LEASE_INDEX)
                .key_condition_expression("#shard = :shard AND lease_expires_at < :now")
                .filter_expression(
                    "attribute_not_exists(requeued_for) OR requeued_for <> lease_owner \
                     OR requeued_at < :stale",
                )
                .expression_attribute_names("#shard", LEASE_SHARD)
                .expression_attribute_values(":shard", s(&shard))
                .expression_attribute_values(":now", n(now_ms))
                .expression_attribute_values(":stale", n(stale_before_ms))
                .limit(i32::try_from(limit).unwrap_or(i32::MAX).max(1))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| self.sdk_error("Query", LEASE_INDEX, &e))?;
            found.extend(page.items().iter().filter_map(lapsed_of));
            start = page.last_evaluated_key;
            if start.is_none() || found.len() >= limit {
                break;
            }
        }
        found.truncate(limit);
        Ok(found)
    }
}

fn lapsed_of(item: &Item) -> Option<LapsedLease> {
    Some(LapsedLease {
        key: item.get("pk")?.as_s().ok()?.clone(),
        lease: Lease {
            owner: item.get("lease_owner")?.as_s().ok()?.clone(),
            expires_at_ms: num(item, "lease_expires_at")?,
        },
    })
}

#[async_trait]
impl LeaseIndex for DynamoStore {
    async fn lapsed(
        &self,
        now_ms: u64,
        stale_before_ms: u64,
        limit: usize,
    ) -> Result<Lapsed, StoreError> {
        let shards = (0..LEASE_SHARDS)
            .map(|shard| self.lapsed_in(shard.to_string(), now_ms, stale_before_ms, limit));
        let mut found = Vec::new();
        let mut unlisted = Vec::new();
        for result in futures::future::join_all(shards).await {
            match result {
                Ok(leases) => found.extend(leases),
                Err(e) => unlisted.push(e),
            }
        }
        if unlisted.len() == usize::from(LEASE_SHARDS) {
            return Err(unlisted.swap_remove(0));
        }
        for e in &unlisted {
            tracing::warn!(error = %e, "a lease shard could not be listed; the next sweep will");
        }
        found.sort_by(|a, b| (a.lease.expires_at_ms, &a.key).cmp(&(b.lease.expires_at_ms, &b.key)));
        found.truncate(limit);
        Ok(Lapsed {
            leases: found,
            unlisted: unlisted.len() as u32,
        })
    }

    async fn claim_requeue(
        &self,
        lapsed: &LapsedLease,
        now_ms: u64,
        stale_before_ms: u64,
    ) -> Result<bool, StoreError> {
        // Unique per claim: a claim whose answer was lost and that the SDK retried finds its
        // own mark instead of reporting someone else's.
        let claim = uuid::Uuid::new_v4().simple().to_string();
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(&lapsed.key))
            .key("sk", s(SortKey::HEAD))
            .update_expression(
                "SET requeued_for = :owner, requeued_at = :now, requeued_by = :claim",
            )
            .condition_expression(
                "lease_owner = :owner AND lease_expires_at = :lease_end \
                 AND lease_expires_at < :now AND expires_at >= :now_s \
                 AND (attribute_not_exists(requeued_for) OR requeued_for <> :owner \
                 OR requeued_at < :stale)",
            )
            .expression_attribute_values(":owner", s(&lapsed.lease.owner))
            .expression_attribute_values(":lease_end", n(lapsed.lease.expires_at_ms))
            .expression_attribute_values(":now", n(now_ms))
            .expression_attribute_values(":now_s", n(self.now_secs()))
            .expression_attribute_values(":stale", n(stale_before_ms))
            .expression_attribute_values(":claim", s(&claim))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) => match e.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(failed)) => {
                    let mark = failed.item().and_then(|item| item.get("requeued_by"));
                    Ok(mark.and_then(|m| m.as_s().ok()) == Some(&claim))
                }
                _ => Err(self.sdk_error("UpdateItem", &lapsed.key, &e)),
            },
        }
    }

    async fn release_requeue(
        &self,
        lapsed: &LapsedLease,
        marked_at_ms: u64,
    ) -> Result<(), StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(&lapsed.key))
            .key("sk", s(SortKey::HEAD))
            .update_expression("REMOVE requeued_for, requeued_at, requeued_by")
            .condition_expression("requeued_for = :owner AND requeued_at = :at")
            .expression_attribute_values(":owner", s(&lapsed.lease.owner))
            .expression_attribute_values(":at", n(marked_at_ms))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) => match e.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(_)) => Ok(()),
                _ => Err(self.sdk_error("UpdateItem", &lapsed.key, &e)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_stable_and_spread() {
        assert_eq!(shard_of("run#a"), shard_of("run#a"));
        let mut seen = std::collections::HashSet::new();
        for i in 0..200 {
            let shard: u8 = shard_of(&format!("run#{i}")).parse().unwrap();
            assert!(shard < LEASE_SHARDS);
            seen.insert(shard);
        }
        assert_eq!(seen.len(), usize::from(LEASE_SHARDS));
    }
}
