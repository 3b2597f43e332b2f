//! One invocation's hold on a run: load, lease, one conditional write per step, release.
//!
//! Every write is conditional on the version this invocation last wrote or read, and the lease
//! is taken with such a write before any node runs, so two invocations can never both advance
//! one run: the second sees a live lease ([`EngineError::Busy`]) or loses the race
//! ([`EngineError::Lost`]) before it calls anything.

use super::EngineError;
use crate::store::{CheckpointStore, Lease, StoreError, StoreKey};
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Persists checkpoints after every step.
#[async_trait]
pub trait Persist<C: Sync>: Send {
    /// Writes `checkpoint`; `release` drops this invocation's lease in the same write.
    async fn save(&mut self, checkpoint: &C, release: bool) -> Result<(), EngineError>;

    /// The last write of an invocation that hands the run on through a queue: instead of
    /// dropping its lease, it parks it ([`Lease::to_parked`]), so the next invocation takes
    /// the run at once, and if none comes (the hand-over message was never sent) the lease
    /// lapses and the sweeper finds the run. By default, a release.
    async fn park(&mut self, checkpoint: &C) -> Result<(), EngineError> {
        self.save(checkpoint, true).await
    }

    /// The last write of an invocation whose run waits for a person until `until_ms`: no
    /// invocation holds the run, but a parked lease lapses then, so the sweeper finds a wait
    /// nobody answered and ends it. By default, a release.
    async fn park_until(&mut self, checkpoint: &C, until_ms: u64) -> Result<(), EngineError> {
        let _ = until_ms;
        self.save(checkpoint, true).await
    }
}

/// The store key of a run.
pub fn run_key(run_id: &str) -> String {
    StoreKey::Run(run_id).to_string()
}

/// A checkpoint read from the store, with what is needed to write it conditionally.
#[derive(Debug, Clone)]
pub struct Loaded<C> {
    /// Decoded checkpoint.
    pub checkpoint: C,
    /// Stored version.
    pub version: u64,
    /// Current lease, if any.
    pub lease: Option<Lease>,
    body: Vec<u8>,
}

impl<C: Serialize> Loaded<C> {
    /// The same stored run (version, lease) holding `checkpoint` instead: locking it writes
    /// `checkpoint` in the write that takes the lease (an answer to a waiting run).
    pub(crate) fn replaced(self, run_id: &str, checkpoint: C) -> Result<Self, EngineError> {
        Ok(Self {
            body: encode(run_id, &checkpoint)?,
            checkpoint,
            version: self.version,
            lease: self.lease,
        })
    }
}

/// An invocation holding a run's lease.
pub struct Session<'a> {
    store: &'a dyn CheckpointStore,
    run_id: String,
    key: String,
    version: u64,
    lease: Lease,
}

impl std::fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("run_id", &self.run_id)
            .field("version", &self.version)
            .field("lease", &self.lease)
            .finish()
    }
}

/// A version conflict means another writer won: report it as `on_conflict`.
fn conflict_to(e: StoreError, on_conflict: EngineError) -> EngineError {
    match e {
        StoreError::Conflict { .. } => on_conflict,
        other => EngineError::Store(other),
    }
}

impl<'a> Session<'a> {
    /// Stores a new run's first checkpoint, holding the lease.
    pub async fn create<C: Serialize + Sync>(
        store: &'a dyn CheckpointStore,
        run_id: &str,
        checkpoint: &C,
        lease: Lease,
    ) -> Result<Session<'a>, EngineError> {
        let key = run_key(run_id);
        let body = encode(run_id, checkpoint)?;
        let version = store.put(&key, 0, &body, Some(&lease)).await.map_err(|e| {
            conflict_to(
                e,
                EngineError::Exists {
                    run_id: run_id.to_owned(),
                },
            )
        })?;
        Ok(Session::held(store, run_id, key, version, lease))
    }

    /// Reads a run without taking it (status queries, deciding whether to resume).
    pub async fn load<C: DeserializeOwned>(
        store: &dyn CheckpointStore,
        run_id: &str,
    ) -> Result<Option<Loaded<C>>, EngineError> {
        let Some(item) = store
            .get(&run_key(run_id))
            .await
            .map_err(EngineError::Store)?
        else {
            return Ok(None);
        };
        let checkpoint = serde_json::from_slice(&item.body).map_err(|e| EngineError::Corrupt {
            run_id: run_id.to_owned(),
            message: e.to_string(),
        })?;
        Ok(Some(Loaded {
            checkpoint,
            version: item.version,
            lease: item.lease,
            body: item.body,
        }))
    }

    /// Takes the lease of a loaded run, conditional on the version read. A live lease refuses
    /// ([`EngineError::Busy`]) unless it is parked.
    pub async fn lock<C>(
        store: &'a dyn CheckpointStore,
        run_id: &str,
        loaded: &Loaded<C>,
        lease: Lease,
        now_ms: u64,
    ) -> Result<Session<'a>, EngineError> {
        if let Some(held) = loaded.lease.as_ref().filter(|l| l.binds(now_ms)) {
            return Err(EngineError::Busy {
                run_id: run_id.to_owned(),
                until_ms: held.expires_at_ms,
            });
        }
        let key = run_key(run_id);
        let version = store
            .put(&key, loaded.version, &loaded.body, Some(&lease))
            .await
            .map_err(|e| {
                conflict_to(
                    e,
                    EngineError::Lost {
                        run_id: run_id.to_owned(),
                    },
                )
            })?;
        Ok(Session::held(store, run_id, key, version, lease))
    }

    fn held(
        store: &'a dyn CheckpointStore,
        run_id: &str,
        key: String,
        version: u64,
        lease: Lease,
    ) -> Session<'a> {
        Session {
            store,
            run_id: run_id.to_owned(),
            key,
            version,
            lease,
        }
    }
}

fn encode<C: Serialize>(run_id: &str, checkpoint: &C) -> Result<Vec<u8>, EngineError> {
    serde_json::to_vec(checkpoint).map_err(|e| EngineError::Corrupt {
        run_id: run_id.to_owned(),
        message: e.to_string(),
    })
}

impl Session<'_> {
    async fn write<C: Serialize>(
        &mut self,
        checkpoint: &C,
        lease: Option<&Lease>,
    ) -> Result<(), EngineError> {
        let body = encode(&self.run_id, checkpoint)?;
        self.version = self
            .store
            .put(&self.key, self.version, &body, lease)
            .await
            .map_err(|e| {
                conflict_to(
                    e,
                    EngineError::Lost {
                        run_id: self.run_id.clone(),
                    },
                )
            })?;
        Ok(())
    }
}

#[async_trait]
impl<C: Serialize + Sync> Persist<C> for Session<'_> {
    async fn save(&mut self, checkpoint: &C, release: bool) -> Result<(), EngineError> {
        let lease = (!release).then(|| self.lease.clone());
        self.write(checkpoint, lease.as_ref()).await
    }

    async fn park(&mut self, checkpoint: &C) -> Result<(), EngineError> {
        let parked = self.lease.to_parked();
        self.write(checkpoint, Some(&parked)).await
    }

    async fn park_until(&mut self, checkpoint: &C, until_ms: u64) -> Result<(), EngineError> {
        self.write(checkpoint, Some(&Lease::parked(until_ms))).await
    }
}
