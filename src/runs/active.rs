//! `MAX_ACTIVE_RUNS_PER_CALLER`: how many unfinished runs one caller may have, counted without
//! a scan.
//!
//! Each caller with a limit has one small item, `active#<caller digest>`, listing the runs it
//! was admitted with (`{"runs": [{"run_id", "admitted_at_ms", "expires_at_ms"}]}`), written
//! with the store's conditional put on the version read, so two concurrent admissions can never
//! both take the last slot. Nothing has to release a slot when a run ends (the SQS worker, a
//! crashed invocation or a sweeper would all have to remember to): a caller's list is checked
//! against the runs themselves only when it is full. Then:
//!
//! - a run that finished, failed or was stopped for good frees its slot at once;
//! - a run whose checkpoint does not exist frees it too, unless it was admitted less than
//!   [`CREATE_GRACE`] ago (its first checkpoint may not be written yet);
//! - a run still `running` or `suspended` keeps it until the slot expires: [`SLOT_TTL`] after
//!   admission, pushed back to the end of the run's lease while an invocation is seen
//!   advancing it. So a run that crashed and is never continued stops counting after at most
//!   [`SLOT_TTL`].
//!
//! Cost: one read and one conditional write per new run while a limit is set; the reads of up
//! to `limit` checkpoints only when the caller is at its limit. No scan, no index.

use crate::engine::{EngineError, Phase, Session};
use crate::rag::{Caller, Outcome, RagCheckpoint};
use crate::store::{CheckpointStore, StoreError, StoreKey};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long a slot counts after admission unless its run is seen being advanced: the longest
/// a Lambda invocation can last, so a crashed run's slot is back within that time.
pub(crate) const SLOT_TTL: Duration = Duration::from_secs(15 * 60);
/// An admitted run whose checkpoint is not there yet keeps its slot this long.
pub(crate) const CREATE_GRACE: Duration = Duration::from_secs(60);
/// Longest `Retry-After` suggested: a caller polls at least this often, since most runs finish
/// well before their slot would expire.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);
/// Admissions retried after losing a write race to another request of the same caller.
const ATTEMPTS: usize = 8;

/// One admitted run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Slot {
    run_id: String,
    admitted_at_ms: u64,
    expires_at_ms: u64,
}

/// The item body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Slots {
    runs: Vec<Slot>,
}

/// The answer to "may this caller start another run?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Yes; the run holds a slot.
    Admitted,
    /// No: `active` runs already count against `limit`.
    Full {
        /// The limit in force.
        limit: u32,
        /// The caller's active runs, oldest first.
        active: Vec<String>,
        /// When to try again (epoch ms): the earliest a slot is sure to be free, but no later
        /// than [`MAX_RETRY_AFTER`] from now.
        retry_at_ms: u64,
        /// When the first slot is sure to be free even if no run finishes (epoch ms).
        free_by_ms: u64,
    },
}

/// The per-caller active-run limit over a checkpoint store.
pub(crate) struct ActiveRuns<'a> {
    store: &'a dyn CheckpointStore,
    limit: u32,
}

impl<'a> ActiveRuns<'a> {
    /// A limit of `limit` unfinished runs per caller (`limit` > 0).
    pub(crate) fn new(store: &'a dyn CheckpointStore, limit: u32) -> Self {
        Self { store, limit }
    }

    /// Admits `run_id` for `caller` at `now_ms` if the caller is under the limit. Admitting
    /// a run that already holds a slot is a no-op.
    pub(crate) async fn admit(
        &self,
        caller: &Caller,
        run_id: &str,
        now_ms: u64,
    ) -> Result<Admission, EngineError> {
        let key = StoreKey::ActiveRuns(&caller.digest()).to_string();
        for _ in 0..ATTEMPTS {
            let (version, mut slots) = self.read(&key).await?;
            if slots.runs.iter().any(|s| s.run_id == run_id) {
                return Ok(Admission::Admitted);
            }
            slots.runs.retain(|s| s.expires_at_ms > now_ms);
            if slots.runs.len() >= self.limit as usize {
                self.check_runs(&mut slots, now_ms).await?;
            }
            if slots.runs.len() >= self.limit as usize {
                let free_by_ms = slots
                    .runs
                    .iter()
                    .map(|s| s.expires_at_ms)
                    .min()
                    .unwrap_or(now_ms);
                let cap = now_ms + MAX_RETRY_AFTER.as_millis() as u64;
                return Ok(Admission::Full {
                    limit: self.limit,
                    active: slots.runs.into_iter().map(|s| s.run_id).collect(),
                    retry_at_ms: free_by_ms.min(cap),
                    free_by_ms,
                });
            }
            slots.runs.push(Slot {
                run_id: run_id.to_owned(),
                admitted_at_ms: now_ms,
                expires_at_ms: now_ms + SLOT_TTL.as_millis() as u64,
            });
            let body = serde_json::to_vec(&slots).map_err(|e| corrupt(&key, e))?;
            match self.store.put(&key, version, &body, None).await {
                Ok(_) => return Ok(Admission::Admitted),
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(EngineError::Store(e)),
            }
        }
        Err(EngineError::Store(StoreError::Transient(format!(
            "{ATTEMPTS} concurrent requests of one caller kept changing its active-run list"
        ))))
    }

    async fn read(&self, key: &str) -> Result<(u64, Slots), EngineError> {
        let Some(item) = self.store.get(key).await.map_err(EngineError::Store)? else {
            return Ok((0, Slots::default()));
        };
        let slots = serde_json::from_slice(&item.body).map_err(|e| corrupt(key, e))?;
        Ok((item.version, slots))
    }

    /// Drops the slots of runs that ended (or never started) and extends those of runs an
    /// invocation is advancing now to the end of its lease.
    async fn check_runs(&self, slots: &mut Slots, now_ms: u64) -> Result<(), EngineError> {
        let mut kept = Vec::with_capacity(slots.runs.len());
        for mut slot in std::mem::take(&mut slots.runs) {
            match Session::load::<RagCheckpoint>(self.store, &slot.run_id).await? {
                None => {
                    let young = slot.admitted_at_ms + CREATE_GRACE.as_millis() as u64 > now_ms;
                    if young {
                        kept.push(slot);
                    }
                }
                Some(loaded) if is_active(&loaded.checkpoint) => {
                    if let Some(lease) = loaded.lease.filter(|l| l.is_live(now_ms)) {
                        slot.expires_at_ms = slot.expires_at_ms.max(lease.expires_at_ms);
                    }
                    kept.push(slot);
                }
                Some(_) => {}
            }
        }
        slots.runs = kept;
        Ok(())
    }
}

/// `running` or `suspended`: the run may still be advanced.
fn is_active(cp: &RagCheckpoint) -> bool {
    match cp.phase {
        Phase::Running => true,
        Phase::Stopped => cp.state.outcome == Some(Outcome::Suspended),
        // A run waiting for a person costs nothing and holds no slot.
        Phase::Finished | Phase::Failed | Phase::Waiting => false,
    }
}

fn corrupt(key: &str, e: serde_json::Error) -> EngineError {
    EngineError::Corrupt {
        run_id: key.to_owned(),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{run_key, Checkpoint};
    use crate::rag::{RagNode, RagState, RunRequest};
    use crate::store::{Lease, MemoryStore};

    const NOW: u64 = 1_800_000_000_000;

    async fn store_run(store: &MemoryStore, run_id: &str, phase: Phase, lease: Option<Lease>) {
        let mut cp: RagCheckpoint = Checkpoint::new(
            run_id,
            RagNode::RouteQuestion,
            RagState::new(RunRequest::new("q")),
        );
        cp.phase = phase;
        let body = serde_json::to_vec(&cp).unwrap();
        let key = run_key(run_id);
        let version = store.get(&key).await.unwrap().map_or(0, |v| v.version);
        store
            .put(&key, version, &body, lease.as_ref())
            .await
            .unwrap();
    }

    fn full_of(admission: Admission) -> (Vec<String>, u64, u64) {
        match admission {
            Admission::Full {
                active,
                retry_at_ms,
                free_by_ms,
                ..
            } => (active, retry_at_ms, free_by_ms),
            Admission::Admitted => panic!("expected Full"),
        }
    }

    #[tokio::test]
    async fn admits_up_to_the_limit_then_refuses_until_a_run_ends() {
        let store = MemoryStore::new();
        let active = ActiveRuns::new(&store, 2);
        let me = Caller::Jwt("me".into());
        for id in ["a", "b"] {
            assert_eq!(
                active.admit(&me, id, NOW).await.unwrap(),
                Admission::Admitted
            );
            store_run(&store, id, Phase::Running, None).await;
        }
        // Admitting a run twice takes one slot.
        assert_eq!(
            active.admit(&me, "a", NOW).await.unwrap(),
            Admission::Admitted
        );
        let (runs, retry_at, free_by) = full_of(active.admit(&me, "c", NOW + 1).await.unwrap());
        assert_eq!(runs, ["a", "b"]);
        assert_eq!(free_by, NOW + SLOT_TTL.as_millis() as u64);
        assert_eq!(retry_at, NOW + 1 + MAX_RETRY_AFTER.as_millis() as u64);

        // Another caller has slots of its own.
        let other = Caller::Jwt("other".into());
        assert_eq!(
            active.admit(&other, "x", NOW).await.unwrap(),
            Admission::Admitted
        );

        store_run(&store, "a", Phase::Finished, None).await;
        assert_eq!(
            active.admit(&me, "c", NOW + 2).await.unwrap(),
            Admission::Admitted
        );
        let (runs, _, _) = full_of(active.admit(&me, "d", NOW + 3).await.unwrap());
        assert_eq!(runs, ["b", "c"]);
    }

    #[tokio::test]
    async fn a_crashed_run_stops_counting_when_its_slot_expires() {
        let store = MemoryStore::new();
        let active = ActiveRuns::new(&store, 1);
        let me = Caller::Anonymous;
        active.admit(&me, "stuck", NOW).await.unwrap();
        store_run(&store, "stuck", Phase::Running, None).await;
        let ttl = SLOT_TTL.as_millis() as u64;
        full_of(active.admit(&me, "next", NOW + ttl - 1).await.unwrap());
        assert_eq!(
            active.admit(&me, "next", NOW + ttl).await.unwrap(),
            Admission::Admitted
        );
    }

    #[tokio::test]
    async fn a_run_being_advanced_keeps_its_slot_until_its_lease_ends() {
        let store = MemoryStore::new();
        let active = ActiveRuns::new(&store, 1);
        let me = Caller::Anonymous;
        active.admit(&me, "long", NOW).await.unwrap();
        let ttl = SLOT_TTL.as_millis() as u64;
        let lease = Lease {
            owner: "inv".into(),
            expires_at_ms: NOW + ttl + 5_000,
        };
        store_run(&store, "long", Phase::Running, Some(lease)).await;
        let (_, retry_at, free_by) =
            full_of(active.admit(&me, "next", NOW + ttl - 1).await.unwrap());
        assert_eq!(free_by, NOW + ttl + 5_000);
        // Sooner than MAX_RETRY_AFTER: the lease's end is when to come back.
        assert_eq!(retry_at, free_by);
    }

    #[tokio::test]
    async fn a_run_not_created_yet_keeps_its_slot_for_the_grace_period_only() {
        let store = MemoryStore::new();
        let active = ActiveRuns::new(&store, 1);
        let me = Caller::Anonymous;
        active.admit(&me, "pending", NOW).await.unwrap();
        let grace = CREATE_GRACE.as_millis() as u64;
        full_of(active.admit(&me, "next", NOW + grace - 1).await.unwrap());
        assert_eq!(
            active.admit(&me, "next", NOW + grace).await.unwrap(),
            Admission::Admitted
        );
    }

    #[tokio::test]
    async fn suspended_runs_count_failed_ones_do_not() {
        let store = MemoryStore::new();
        let active = ActiveRuns::new(&store, 1);
        let me = Caller::Anonymous;
        active.admit(&me, "s", NOW).await.unwrap();
        let mut cp: RagCheckpoint = Checkpoint::new(
            "s",
            RagNode::RouteQuestion,
            RagState::new(RunRequest::new("q")),
        );
        cp.phase = Phase::Stopped;
        cp.state.outcome = Some(Outcome::Suspended);
        store
            .put(&run_key("s"), 0, &serde_json::to_vec(&cp).unwrap(), None)
            .await
            .unwrap();
        full_of(active.admit(&me, "t", NOW + 1).await.unwrap());
        store_run(&store, "s", Phase::Failed, None).await;
        assert_eq!(
            active.admit(&me, "t", NOW + 2).await.unwrap(),
            Admission::Admitted
        );
    }
}
