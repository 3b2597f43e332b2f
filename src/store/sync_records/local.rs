//! [`SyncRecords`] for the local stores (memory, file), on their own conditional puts.
//!
//! Each record is an item `sync#<dest>#<sort key>` (see [`SyncSortKey`]) whose body is the
//! record as JSON with its destination; a decision (a document's `rev`, the lease, `scheduled`)
//! is a read and a put conditional on the version read, repeated when another writer got there
//! first.

use super::{DocRecord, JobRecord, PublishEnd, SyncControl, SyncRecords};
use crate::store::key::SyncSortKey;
use crate::store::thread::LocalItems;
use crate::store::{StoreError, StoreKey};
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Reads and writes of the control record before a writer gives up (each lost race means
/// another writer changed it meanwhile).
const CONTROL_WRITE_ATTEMPTS: usize = 64;

/// A stored record with where it belongs (a prefix pass may return more: the file store
/// matches on a shortened file name).
#[derive(Serialize, Deserialize)]
struct Envelope<T> {
    dest: String,
    sort: String,
    #[serde(flatten)]
    record: T,
}

/// The control record with its lease and schedule.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct ControlItem {
    #[serde(flatten)]
    control: SyncControl,
    lease_until: Option<u64>,
    lease_owner: Option<String>,
    scheduled: bool,
}

fn key(dest: &str, sort: SyncSortKey<'_>) -> String {
    format!("{}#{sort}", StoreKey::Sync(dest))
}

fn corrupt(key: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Permanent(format!("corrupt sync item {key}: {e}"))
}

/// The record under `key` and its store version.
async fn read<S: LocalItems + ?Sized, T: DeserializeOwned>(
    store: &S,
    key: &str,
) -> Result<Option<(u64, T)>, StoreError> {
    let Some(item) = store.get(key).await? else {
        return Ok(None);
    };
    let envelope: Envelope<T> = serde_json::from_slice(&item.body).map_err(|e| corrupt(key, e))?;
    Ok(Some((item.version, envelope.record)))
}

/// Writes `record` under `key` as the version after `expected`.
async fn write<S: LocalItems + ?Sized, T: Serialize>(
    store: &S,
    dest: &str,
    sort: SyncSortKey<'_>,
    expected: u64,
    record: T,
) -> Result<u64, StoreError> {
    let key = &self::key(dest, sort);
    let envelope = Envelope {
        dest: dest.to_owned(),
        sort: sort.to_string(),
        record,
    };
    let body = serde_json::to_vec(&envelope).map_err(|e| corrupt(key, e))?;
    store.put(key, expected, &body, None).await
}

/// Every record of `dest` under sort keys starting with `prefix`.
async fn all<S: LocalItems + ?Sized, T: DeserializeOwned>(
    store: &S,
    dest: &str,
    prefix: &str,
) -> Result<Vec<T>, StoreError> {
    let start = format!("{}#{prefix}", StoreKey::Sync(dest));
    let mut out = Vec::new();
    for body in store.bodies_with_prefix(&start).await? {
        let envelope: Envelope<serde_json::Value> =
            serde_json::from_slice(&body).map_err(|e| corrupt(&start, e))?;
        if envelope.dest == dest && envelope.sort.starts_with(prefix) {
            out.push(serde_json::from_value(envelope.record).map_err(|e| corrupt(&start, e))?);
        }
    }
    Ok(out)
}

/// Applies `change` to the control record of `dest` and stores it, unless `change` declines
/// (`None`); repeated on a lost race. What `change` returned, or `None` when it declined.
async fn update_control<S, R>(
    store: &S,
    dest: &str,
    change: impl Fn(&mut ControlItem) -> Option<R> + Send,
) -> Result<Option<R>, StoreError>
where
    S: LocalItems + ?Sized,
    R: Send,
{
    let sort = SyncSortKey::Control;
    let k = key(dest, sort);
    for _ in 0..CONTROL_WRITE_ATTEMPTS {
        let (version, mut item) = read::<S, ControlItem>(store, &k).await?.unwrap_or_default();
        let Some(out) = change(&mut item) else {
            return Ok(None);
        };
        match write(store, dest, sort, version, item).await {
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(e),
            Ok(_) => return Ok(Some(out)),
        }
    }
    Err(StoreError::Transient(format!(
        "{CONTROL_WRITE_ATTEMPTS} concurrent writers kept changing {k}"
    )))
}

#[async_trait]
impl<S: LocalItems> SyncRecords for S {
    async fn doc(&self, dest: &str, rel: &str) -> Result<Option<DocRecord>, StoreError> {
        let k = key(dest, SyncSortKey::Doc(rel));
        Ok(read(self, &k).await?.map(|(_, record)| record))
    }

    async fn docs(&self, dest: &str) -> Result<Vec<DocRecord>, StoreError> {
        all(self, dest, SyncSortKey::DOCS).await
    }

    async fn put_doc(
        &self,
        dest: &str,
        record: &DocRecord,
        expected: Option<u64>,
    ) -> Result<bool, StoreError> {
        let sort = SyncSortKey::Doc(&record.rel);
        let current = read::<_, DocRecord>(self, &key(dest, sort)).await?;
        let version = match (&current, expected) {
            (None, None) => 0,
            (Some((version, stored)), Some(rev)) if stored.rev == rev => *version,
            _ => return Ok(false),
        };
        let next = DocRecord {
            rev: record.rev + 1,
            ..record.clone()
        };
        match write(self, dest, sort, version, next).await {
            Ok(_) => Ok(true),
            Err(StoreError::Conflict { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn control(&self, dest: &str) -> Result<SyncControl, StoreError> {
        let k = key(dest, SyncSortKey::Control);
        Ok(read::<_, ControlItem>(self, &k)
            .await?
            .map(|(_, item)| item.control)
            .unwrap_or_default())
    }

    async fn count_change(&self, dest: &str, embedded: u64, cached: u64) -> Result<(), StoreError> {
        update_control(self, dest, |item| {
            item.control.changes += 1;
            item.control.embedded += embedded;
            item.control.cached += cached;
            Some(())
        })
        .await
        .map(|_| ())
    }

    async fn schedule(&self, dest: &str) -> Result<bool, StoreError> {
        let scheduled = update_control(self, dest, |item| {
            (!item.scheduled).then(|| item.scheduled = true)
        })
        .await?;
        Ok(scheduled.is_some())
    }

    async fn unschedule(&self, dest: &str) -> Result<(), StoreError> {
        update_control(self, dest, |item| {
            item.scheduled = false;
            Some(())
        })
        .await
        .map(|_| ())
    }

    async fn take_publish_lease(
        &self,
        dest: &str,
        owner: &str,
        now: u64,
        until: u64,
    ) -> Result<Option<SyncControl>, StoreError> {
        update_control(self, dest, |item| {
            if item.lease_until.is_some_and(|at| at >= now) {
                return None;
            }
            item.lease_until = Some(until);
            item.lease_owner = Some(owner.to_owned());
            item.scheduled = false;
            Some(item.control.clone())
        })
        .await
    }

    async fn finish_publish(
        &self,
        dest: &str,
        owner: &str,
        end: PublishEnd<'_>,
    ) -> Result<bool, StoreError> {
        let finished = update_control(self, dest, |item| {
            if item.lease_owner.as_deref() != Some(owner) {
                return None;
            }
            let c = &mut item.control;
            c.published_changes = end.taken.changes;
            c.published_embedded = end.taken.embedded;
            c.published_cached = end.taken.cached;
            if let Some(version) = end.version {
                c.version = Some(version.to_owned());
            }
            if end.published {
                c.publishes += 1;
            }
            item.lease_until = None;
            item.lease_owner = None;
            Some(())
        })
        .await?;
        Ok(finished.is_some())
    }

    async fn put_job(&self, dest: &str, record: &JobRecord) -> Result<(), StoreError> {
        let sort = SyncSortKey::Job(record.number);
        let k = key(dest, sort);
        // Written once per publish; a repeat replaces it, as DynamoDB's unconditional put.
        for _ in 0..CONTROL_WRITE_ATTEMPTS {
            let version = self.get(&k).await?.map_or(0, |v| v.version);
            match write(self, dest, sort, version, record).await {
                Err(StoreError::Conflict { .. }) => continue,
                other => return other.map(|_| ()),
            }
        }
        Err(StoreError::Transient(format!(
            "{CONTROL_WRITE_ATTEMPTS} concurrent writers kept replacing {k}"
        )))
    }

    async fn jobs(&self, dest: &str) -> Result<Vec<JobRecord>, StoreError> {
        let mut jobs: Vec<JobRecord> = all(self, dest, SyncSortKey::JOBS).await?;
        jobs.sort_by_key(|job| job.number);
        Ok(jobs)
    }
}
