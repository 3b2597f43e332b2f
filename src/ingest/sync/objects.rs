//! The sync's own objects beside a destination's bundles, under `PREFIX/.sync/` (hidden from
//! a sync whose source holds its destination): the state, the embedding cache, the reader
//! output of documents synced by the Lambda function. Plain gets and puts through the
//! destination's [`BundleStore`].
use super::state::SyncState;
use crate::ingest::IngestError;
use crate::kb::BundleStore;
use std::path::PathBuf;

/// The state object's key under `.sync/`.
const STATE: &str = "state.json.gz";

/// The objects under `PREFIX/.sync/` of one destination.
#[derive(Debug, Clone)]
pub(crate) struct SyncObjects {
    pub(crate) store: BundleStore,
}

impl SyncObjects {
    /// The sync objects beside `store`'s bundles.
    pub(crate) fn new(store: BundleStore) -> Self {
        Self { store }
    }

    /// The full key of `rel` under `.sync/`.
    pub(crate) fn key(&self, rel: &str) -> String {
        self.store.location.key(&format!(".sync/{rel}"))
    }

    /// The object at `.sync/REL`, `None` when there is none.
    pub(crate) async fn get(&self, rel: &str) -> Result<Option<Vec<u8>>, IngestError> {
        Ok(self.store.get_object(&self.key(rel)).await?)
    }

    /// Writes `.sync/REL`.
    pub(crate) async fn put(&self, rel: &str, body: Vec<u8>) -> Result<(), IngestError> {
        Ok(self.store.put(&self.key(rel), body).await?)
    }

    /// An object that is there but not what the sync wrote.
    pub(crate) fn invalid(&self, rel: &str, message: String) -> IngestError {
        IngestError::Invalid {
            path: PathBuf::from(self.store.location.url(&self.key(rel))),
            message,
        }
    }
}

impl SyncObjects {
    /// The last sync's state, or an empty one when this destination was never synced.
    pub(crate) async fn load_state(&self) -> Result<SyncState, IngestError> {
        let Some(bytes) = self.get(STATE).await? else {
            return Ok(SyncState::default());
        };
        SyncState::decode(&bytes).map_err(|e| self.invalid(STATE, e))
    }

    /// Replaces the stored state (one `PutObject`: readers see the old one or this one).
    pub(crate) async fn save_state(&self, state: &SyncState) -> Result<(), IngestError> {
        self.put(STATE, state.encode()).await
    }
}
