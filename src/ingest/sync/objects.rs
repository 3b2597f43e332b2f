//! The sync's own objects beside a destination's bundles, under `PREFIX/.sync/` (hidden from
//! a sync whose source holds its destination): the state, the embedding cache, the reader
//! output of documents synced by the Lambda function. Plain gets and puts through the
//! destination's [`BundleStore`] client.
use crate::kb::bundle::s3::BundleStore;
use crate::search::RetrievalError;
use aws_sdk_s3::primitives::ByteStream;
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
        let key = self.key(rel);
        let out = self
            .store
            .client
            .get_object()
            .bucket(&self.store.location.bucket)
            .key(&key)
            .send()
            .await;
        let out = match out {
            Ok(out) => out,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => return Ok(None),
            Err(e) => return Err(self.store.sdk_error(&key, e)),
        };
        let body = out
            .body
            .collect()
            .await
            .map_err(|e| self.store.error(&key, format!("download failed: {e}")))?;
        Ok(Some(body.into_bytes().to_vec()))
    }

    /// Writes `.sync/REL`.
    pub(crate) async fn put(&self, rel: &str, body: Vec<u8>) -> Result<(), RetrievalError> {
        let key = self.key(rel);
        self.store
            .client
            .put_object()
            .bucket(&self.store.location.bucket)
            .key(&key)
            .body(ByteStream::from(body))
            .send()
            .await
            .map(drop)
            .map_err(|e| self.store.sdk_error(&key, e))
    }

    /// An object that is there but not what the sync wrote.
    pub(crate) fn invalid(&self, rel: &str, message: String) -> RetrievalError {
        RetrievalError::Invalid {
            path: PathBuf::from(self.store.location.url(&self.key(rel))),
            message,
        }
    }
}
