//! The sync's own objects beside a destination's bundles, under `PREFIX/.sync/` (hidden from
//! a sync whose source holds its destination): the state, the embedding cache, the reader
//! output of documents synced by the Lambda function. Plain gets and puts through the
//! destination's [`BundleStore`].
use crate::kb::bundle::s3::BundleStore;
use crate::search::RetrievalError;
use std::path::PathBuf;

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
    pub(crate) async fn get(&self, rel: &str) -> Result<Option<Vec<u8>>, RetrievalError> {
        self.store.get_object(&self.key(rel)).await
    }

    /// Writes `.sync/REL`.
    pub(crate) async fn put(&self, rel: &str, body: Vec<u8>) -> Result<(), RetrievalError> {
        self.store.put(&self.key(rel), body).await
    }

    /// An object that is there but not what the sync wrote.
    pub(crate) fn invalid(&self, rel: &str, message: String) -> RetrievalError {
        RetrievalError::Invalid {
            path: PathBuf::from(self.store.location.url(&self.key(rel))),
            message,
        }
    }
}
