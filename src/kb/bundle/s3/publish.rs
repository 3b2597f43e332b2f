//! Publishing bundles to S3 (`bounded-rag kb publish`, `kb use`): a bundle folder is checked
//! and uploaded under its content hash, manifest last, then the pointer is overwritten so
//! readers load it. Reading (the pointer, manifests, `kb list`, loading) is `store.rs` and
//! `fetch.rs` beside it; these are [`BundleStore`]'s writing methods.
use crate::kb::bundle::format::{
    now_rfc3339, Manifest, Pointer, Published, MANIFEST, POINTER, POINTER_FORMAT,
};
use crate::kb::bundle::open::open_dir;
use crate::kb::bundle::s3::BundleStore;
use crate::search::RetrievalError;
use aws_sdk_s3::primitives::ByteStream;
use std::path::Path;

impl BundleStore {
    /// Uploads the bundle in `dir` (checked first: manifest, sizes, SHA-256) under its
    /// content hash, unless that version is already there, then points readers at it.
    pub async fn publish(&self, dir: &Path) -> Result<Published, RetrievalError> {
        let manifest_path = dir.join(MANIFEST);
        let bytes =
            std::fs::read(&manifest_path).map_err(|e| RetrievalError::io(&manifest_path, e))?;
        let manifest = Manifest::parse(&bytes, &manifest_path)?;
        // Opening it proves the index and vectors are whole before anything is uploaded.
        drop(open_dir(dir)?);
        let version = manifest.content_hash.clone();
        if self.manifest(&version).await.is_err() {
            for file in &manifest.files {
                let path = dir.join(&file.path);
                let body = std::fs::read(&path).map_err(|e| RetrievalError::io(&path, e))?;
                file.verify(&body, &path.display().to_string())?;
                self.put(&self.bundle_key(&version, &file.path), body)
                    .await?;
            }
            // The manifest last: a bundle folder with a manifest is complete.
            self.put(&self.bundle_key(&version, MANIFEST), bytes)
                .await?;
        }
        self.point(&version).await?;
        Ok(Published {
            version,
            current: true,
            manifest,
        })
    }

    /// Points readers at an already published `version` (a rollback, or a roll forward).
    pub async fn point(&self, version: &str) -> Result<(), RetrievalError> {
        self.manifest(version).await?;
        let pointer = Pointer {
            format: POINTER_FORMAT.into(),
            version: version.to_owned(),
            published_at: now_rfc3339(),
        };
        let body = serde_json::to_vec_pretty(&pointer).expect("pointer serializes");
        self.put(&self.location.key(POINTER), body).await
    }

    /// Writes `body` at `key` of the bucket (a bundle's file, the pointer, or an object kept
    /// beside the bundles: the sync's under `.sync/`).
    pub(crate) async fn put(&self, key: &str, body: Vec<u8>) -> Result<(), RetrievalError> {
        self.client
            .put_object()
            .bucket(&self.location.bucket)
            .key(key)
            .body(ByteStream::from(body))
            .send()
            .await
            .map(drop)
            .map_err(|e| self.sdk_error(key, e))
    }
}
