//! The sweep: every minute (the sweeper function, on an EventBridge schedule), the runs whose
//! lease lapsed are re-queued,
//! so a crashed invocation's run resumes within a minute of its lease instead of after the
//! queue's visibility timeout (13 minutes), or never (a run whose continuation was never sent).
//!
//! A lease lapses only when its invocation is certainly over: it lasts until the usable
//! deadline plus the time of a last checkpoint write and a continuation send
//! ([`crate::aws::lease_grace`]). Runs still `running` then were cut off mid-step; runs
//! `suspended` with their lease still parked never got their continuation queued. Either way
//! the sweeper sends the continuation message `{"run_id"}`; the worker takes the lapsed lease
//! and re-runs at most the step that was in flight (checkpoints are per step).
//!
//! Exactly one message per lapsed lease, however many sweepers run: each re-queue is claimed
//! first by a conditional write on the run's item scoped to that lease ([`LeaseIndex`]), and
//! only the claimer sends. A claim whose send fails is released so the next sweep tries
//! again; a claim whose sweeper died before sending is retried after [`REQUEUE_AGAIN_AFTER`].
//! Nothing here retries an AWS call: the SDK's standard retries are the only retry layer, and
//! the next scheduled sweep is the next attempt.

use super::queue::{WorkMessage, WorkQueue};
use crate::error::Classify;
use crate::store::{LapsedLease, LeaseIndex, StoreError};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Most runs re-queued by one sweep; the next sweep takes the rest, oldest lapse first.
pub(crate) const SWEEP_LIMIT: usize = 500;
/// A re-queue claim older than this whose run still holds the same lapsed lease is claimed
/// again (its sweeper died between the claim and the send, or the message was lost). Longer
/// than the work queue's visibility timeout, so a re-queued message that a worker received
/// and crashed on comes back on its own first.
pub(crate) const REQUEUE_AGAIN_AFTER: Duration = Duration::from_secs(15 * 60);
/// Claims and sends in flight at once.
const IN_FLIGHT: usize = 10;

/// What one sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepReport {
    /// Lapsed, unclaimed leases listed.
    pub lapsed: u32,
    /// Runs this sweep re-queued (one message each).
    pub requeued: u32,
    /// Listed, but claimed by another sweeper or taken over by a worker meanwhile.
    pub skipped: u32,
    /// Claims or sends that failed; the next sweep tries them again.
    pub failed: u32,
    /// Parts of the lease index that could not be listed; the next sweep lists them.
    pub unlisted: u32,
}

/// Re-queues up to [`SWEEP_LIMIT`] runs whose lease lapsed before `now_ms`.
///
/// Fails only when no lapsed lease can be listed at all; a part of the index that could not
/// be read, a failed claim or a failed send is counted in the report and left to the next
/// sweep.
pub async fn sweep(
    index: &dyn LeaseIndex,
    queue: &dyn WorkQueue,
    now_ms: u64,
) -> Result<SweepReport, StoreError> {
    let stale_before_ms = now_ms.saturating_sub(millis(REQUEUE_AGAIN_AFTER));
    let listed = index.lapsed(now_ms, stale_before_ms, SWEEP_LIMIT).await?;
    let mut report = SweepReport {
        lapsed: count(listed.leases.len()),
        unlisted: listed.unlisted,
        ..SweepReport::default()
    };
    let outcomes: Vec<Outcome> = futures::stream::iter(listed.leases.iter())
        .map(|lapsed| requeue(index, queue, lapsed, now_ms, stale_before_ms))
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    for outcome in outcomes {
        match outcome {
            Outcome::Requeued => report.requeued += 1,
            Outcome::Skipped => report.skipped += 1,
            Outcome::Failed => report.failed += 1,
        }
    }
    Ok(report)
}

enum Outcome {
    Requeued,
    Skipped,
    Failed,
}

async fn requeue(
    index: &dyn LeaseIndex,
    queue: &dyn WorkQueue,
    lapsed: &LapsedLease,
    now_ms: u64,
    stale_before_ms: u64,
) -> Outcome {
    let Some(run_id) = lapsed.run_id() else {
        tracing::warn!(key = lapsed.key, "leased item is not a run; left alone");
        return Outcome::Skipped;
    };
    match index.claim_requeue(lapsed, now_ms, stale_before_ms).await {
        Ok(true) => {}
        Ok(false) => return Outcome::Skipped,
        Err(e) => {
            tracing::warn!(run_id, error = %e, class = ?e.class(), "could not claim the re-queue");
            return Outcome::Failed;
        }
    }
    match queue.send(&WorkMessage::continuation(run_id)).await {
        Ok(()) => {
            tracing::info!(
                run_id,
                lapsed_at_ms = lapsed.lease.expires_at_ms,
                "lease lapsed: run re-queued"
            );
            Outcome::Requeued
        }
        Err(e) => {
            tracing::warn!(run_id, error = %e, "could not re-queue the run; the next sweep will");
            if let Err(e) = index.release_requeue(lapsed, now_ms).await {
                tracing::warn!(run_id, error = %e, "could not release the re-queue claim");
            }
            Outcome::Failed
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::queue::{MemoryQueue, QueueError};
    use crate::store::{CheckpointStore, Lease, MemoryStore};
    use async_trait::async_trait;

    const NOW: u64 = 1_700_000_000_000;

    fn lease(owner: &str, expires_at_ms: u64) -> Lease {
        Lease {
            owner: owner.into(),
            expires_at_ms,
        }
    }

    async fn store_with(runs: &[(&str, Option<Lease>)]) -> MemoryStore {
        let store = MemoryStore::new();
        for (key, lease) in runs {
            store.put(key, 0, b"{}", lease.as_ref()).await.unwrap();
        }
        store
    }

    #[tokio::test]
    async fn only_lapsed_leases_are_requeued_once_each() {
        let store = store_with(&[
            ("run#lapsed", Some(lease("a", NOW - 1))),
            ("run#live", Some(lease("b", NOW + 3_600_000))),
            ("run#done", None),
            ("run#older", Some(lease("c", NOW - 60_000))),
        ])
        .await;
        let queue = MemoryQueue::default();
        let report = sweep(&store, &queue, NOW).await.unwrap();
        assert_eq!(
            report,
            SweepReport {
                lapsed: 2,
                requeued: 2,
                ..SweepReport::default()
            }
        );
        let sent: Vec<String> = queue.sent().into_iter().map(|m| m.run_id).collect();
        let mut sorted = sent.clone();
        sorted.sort();
        assert_eq!(sorted, ["lapsed", "older"]);
        assert!(queue.sent().iter().all(|m| m.request.is_none()));

        // A minute later the same leases are still lapsed, but already re-queued.
        let again = sweep(&store, &queue, NOW + 60_000).await.unwrap();
        assert_eq!(again, SweepReport::default());
        assert_eq!(queue.sent().len(), 2);
        // Past REQUEUE_AGAIN_AFTER with the run still untouched: once more.
        let late = NOW + millis(REQUEUE_AGAIN_AFTER) + 1;
        assert_eq!(sweep(&store, &queue, late).await.unwrap().requeued, 2);
    }

    #[tokio::test]
    async fn a_new_lease_makes_a_run_sweepable_again() {
        let store = store_with(&[("run#r", Some(lease("a", NOW - 1)))]).await;
        let queue = MemoryQueue::default();
        assert_eq!(sweep(&store, &queue, NOW).await.unwrap().requeued, 1);
        // The re-queued run is taken by a worker that crashes too.
        store
            .put("run#r", 1, b"{}", Some(&lease("b", NOW + 5_000)))
            .await
            .unwrap();
        assert_eq!(sweep(&store, &queue, NOW + 1_000).await.unwrap().lapsed, 0);
        assert_eq!(
            sweep(&store, &queue, NOW + 5_000).await.unwrap().requeued,
            1
        );
        assert_eq!(queue.sent().len(), 2);
    }

    #[tokio::test]
    async fn two_sweepers_racing_send_one_message_per_lease() {
        let store = store_with(&[
            ("run#x", Some(lease("a", NOW - 10))),
            ("run#y", Some(lease("b", NOW - 20))),
        ])
        .await;
        let queue = MemoryQueue::default();
        let (a, b) = tokio::join!(sweep(&store, &queue, NOW), sweep(&store, &queue, NOW));
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a.requeued + b.requeued, 2, "{a:?} {b:?}");
        assert_eq!(queue.sent().len(), 2);
    }

    /// A queue that refuses every message.
    struct Down;

    #[async_trait]
    impl WorkQueue for Down {
        async fn send(&self, _: &WorkMessage) -> Result<(), QueueError> {
            Err(QueueError::Transient("throttled".into()))
        }
    }

    #[tokio::test]
    async fn a_failed_send_releases_the_claim_for_the_next_sweep() {
        let store = store_with(&[("run#r", Some(lease("a", NOW - 1)))]).await;
        let report = sweep(&store, &Down, NOW).await.unwrap();
        assert_eq!((report.lapsed, report.failed, report.requeued), (1, 1, 0));
        let queue = MemoryQueue::default();
        assert_eq!(sweep(&store, &queue, NOW + 1).await.unwrap().requeued, 1);
        assert_eq!(queue.sent().len(), 1);
    }

    #[tokio::test]
    async fn items_that_are_not_runs_are_left_alone() {
        let store = store_with(&[("idem#k", Some(lease("a", NOW - 1)))]).await;
        let queue = MemoryQueue::default();
        let report = sweep(&store, &queue, NOW).await.unwrap();
        assert_eq!((report.lapsed, report.skipped), (1, 1));
        assert!(queue.sent().is_empty());
    }
}
