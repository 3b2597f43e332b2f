//! Finding runs whose holder vanished: the [`LeaseIndex`] trait.
//!
//! Every checkpoint written with a lease stays listed here until a write without one (the
//! run ended, or failed for good). An invocation that crashes mid-step, or after parking a
//! suspended run but before queueing its continuation, leaves its lease behind; once the
//! lease lapses, the sweeper ([`crate::entry::sweeper`]) lists the run and re-queues it. The
//! re-queue is claimed first with a conditional write scoped to that very lease, so two
//! sweepers racing on one run produce one message, and a run is re-queued once per lapsed
//! lease (again only if the mark is older than the caller's `stale_before_ms`, in case the
//! claiming sweeper died before sending).

use super::{Lease, StoreError, StoreKey};
use async_trait::async_trait;

/// A run whose lease lapsed, as the index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LapsedLease {
    /// Store key of the run (`run#<id>`).
    pub key: String,
    /// The lapsed lease.
    pub lease: Lease,
}

impl LapsedLease {
    /// The run id, when the key is a run's (`run#<id>`).
    pub(crate) fn run_id(&self) -> Option<&str> {
        match StoreKey::parse(&self.key)? {
            StoreKey::Run(run_id) => Some(run_id),
            StoreKey::Idempotency(_)
            | StoreKey::ActiveRuns(_)
            | StoreKey::Cache(_)
            | StoreKey::Thread(_)
            | StoreKey::ThreadTurn(_)
            | StoreKey::Finished(_)
            | StoreKey::Rate(_)
            | StoreKey::Sync(_) => None,
        }
    }
}

/// What one listing found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lapsed {
    /// Lapsed, unmarked leases, oldest lapse first.
    pub leases: Vec<LapsedLease>,
    /// Parts of the index that could not be read this time (shards whose query failed):
    /// the next listing covers them.
    pub unlisted: u32,
}

/// Lists lapsed leases and claims their re-queue, once per lease.
#[async_trait]
pub trait LeaseIndex: Send + Sync {
    /// Up to `limit` items whose lease lapsed before `now_ms`, oldest lapse first, leaving
    /// out those already marked re-queued for that lease after `stale_before_ms`. Fails only
    /// when nothing could be read; a partly read index is reported in [`Lapsed::unlisted`].
    async fn lapsed(
        &self,
        now_ms: u64,
        stale_before_ms: u64,
        limit: usize,
    ) -> Result<Lapsed, StoreError>;

    /// Marks `lapsed` re-queued at `now_ms`, only if the item still holds that lease, the
    /// lease has lapsed, and no mark for it is newer than `stale_before_ms`. `true` when this
    /// caller made the mark (and must send the message), `false` when someone else did or
    /// the run moved on.
    async fn claim_requeue(
        &self,
        lapsed: &LapsedLease,
        now_ms: u64,
        stale_before_ms: u64,
    ) -> Result<bool, StoreError>;

    /// Removes the mark this caller made at `marked_at_ms` (its message could not be sent),
    /// so the next sweep tries again. Does nothing if the item changed meanwhile.
    async fn release_requeue(
        &self,
        lapsed: &LapsedLease,
        marked_at_ms: u64,
    ) -> Result<(), StoreError>;
}
