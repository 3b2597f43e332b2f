//! Downloading a published bundle: every file at once, each checked against the manifest's
//! size and SHA-256 as it streams in, into memory when the bundle is small enough, otherwise
//! into a local folder (Lambda's `/tmp`) that is renamed into place once complete.
use super::store::BundleStore;
use crate::kb::bundle::format::{BundleFile, Manifest, MANIFEST};
use crate::kb::bundle::knowledge_base::KnowledgeBase;
use crate::kb::bundle::open;
use crate::knowledge::hex_digest;
use crate::search::RetrievalError;
use aws_sdk_s3::primitives::ByteStream;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tantivy::directory::OwnedBytes;
use tokio::io::AsyncWriteExt;

/// A bundle loaded from S3.
pub(crate) struct Fetched {
    /// The knowledge base.
    pub kb: KnowledgeBase,
    /// Bytes of the bundle's files.
    pub bytes: u64,
    /// Held in memory (`true`) or memory-mapped from the local folder (`false`).
    pub(crate) in_memory: bool,
}

impl BundleStore {
    /// Loads the published `version`: into memory when its files total at most
    /// `memory_limit` bytes, else into `cache_dir/<version>` (reused when already complete).
    pub(crate) async fn fetch(
        &self,
        version: &str,
        memory_limit: u64,
        cache_dir: &Path,
    ) -> Result<Fetched, RetrievalError> {
        let manifest = self.manifest(version).await?;
        let bytes = manifest.total_bytes();
        if bytes <= memory_limit {
            let files = futures::future::try_join_all(
                manifest.files.iter().map(|f| self.download(version, f)),
            )
            .await?;
            let files: HashMap<String, OwnedBytes> = manifest
                .files
                .iter()
                .map(|f| f.path.clone())
                .zip(files.into_iter().map(OwnedBytes::new))
                .collect();
            let origin = self.location.url(&self.bundle_key(version, ""));
            let kb = KnowledgeBase::assemble(open::open_in_memory(manifest, files, &origin)?)?;
            return Ok(Fetched {
                kb,
                bytes,
                in_memory: true,
            });
        }
        let dir = cache_dir.join(version);
        if !dir.join(MANIFEST).is_file() {
            self.download_to(version, &manifest, cache_dir, &dir)
                .await?;
        }
        Ok(Fetched {
            kb: KnowledgeBase::assemble(open::open_dir(&dir)?)?,
            bytes,
            in_memory: false,
        })
    }

    /// Downloads every file into `cache_dir/.<version>.partial`, then renames it to `dir`.
    async fn download_to(
        &self,
        version: &str,
        manifest: &Manifest,
        cache_dir: &Path,
        dir: &Path,
    ) -> Result<(), RetrievalError> {
        let staging = cache_dir.join(format!(".{version}.partial"));
        let _ = tokio::fs::remove_dir_all(&staging).await;
        futures::future::try_join_all(
            manifest
                .files
                .iter()
                .map(|f| self.download_file(version, f, &staging)),
        )
        .await?;
        let json = serde_json::to_vec_pretty(manifest).expect("manifest serializes");
        let path = staging.join(MANIFEST);
        tokio::fs::write(&path, json)
            .await
            .map_err(|e| RetrievalError::io(&path, e))?;
        let _ = tokio::fs::remove_dir_all(dir).await;
        tokio::fs::rename(&staging, dir)
            .await
            .map_err(|e| RetrievalError::io(dir, e))
    }

    /// One file into memory, checked.
    async fn download(&self, version: &str, file: &BundleFile) -> Result<Vec<u8>, RetrievalError> {
        let key = self.bundle_key(version, &file.path);
        let mut body = self.body(&key).await?;
        let mut buf = Vec::with_capacity(file.bytes as usize);
        let mut hash = Sha256::new();
        while let Some(chunk) = self.next_chunk(&key, &mut body).await? {
            hash.update(&chunk);
            buf.extend_from_slice(&chunk);
        }
        self.check(&key, file, buf.len() as u64, hash)?;
        Ok(buf)
    }

    /// One file into `staging`, checked.
    async fn download_file(
        &self,
        version: &str,
        file: &BundleFile,
        staging: &Path,
    ) -> Result<(), RetrievalError> {
        let path: PathBuf = staging.join(&file.path);
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| RetrievalError::io(parent, e))?;
        }
        let mut out = tokio::fs::File::create(&path)
            .await
            .map_err(|e| RetrievalError::io(&path, e))?;
        let key = self.bundle_key(version, &file.path);
        let mut body = self.body(&key).await?;
        let mut hash = Sha256::new();
        let mut written = 0u64;
        while let Some(chunk) = self.next_chunk(&key, &mut body).await? {
            hash.update(&chunk);
            written += chunk.len() as u64;
            out.write_all(&chunk)
                .await
                .map_err(|e| RetrievalError::io(&path, e))?;
        }
        out.flush()
            .await
            .map_err(|e| RetrievalError::io(&path, e))?;
        self.check(&key, file, written, hash)
    }

    async fn body(&self, key: &str) -> Result<ByteStream, RetrievalError> {
        let out = self
            .client
            .get_object()
            .bucket(&self.location.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| self.sdk_error(key, e))?;
        Ok(out.body)
    }

    async fn next_chunk(
        &self,
        key: &str,
        body: &mut ByteStream,
    ) -> Result<Option<bytes::Bytes>, RetrievalError> {
        body.try_next()
            .await
            .map_err(|e| self.error(key, format!("download failed: {e}")))
    }

    fn check(
        &self,
        key: &str,
        file: &BundleFile,
        len: u64,
        hash: Sha256,
    ) -> Result<(), RetrievalError> {
        if len != file.bytes {
            return Err(self.error(
                key,
                format!(
                    "{len} bytes where the manifest says {}: the bundle is corrupt",
                    file.bytes
                ),
            ));
        }
        if hex_digest(hash) != file.sha256 {
            return Err(self.error(
                key,
                "content does not match the manifest's SHA-256: the bundle is corrupt".into(),
            ));
        }
        Ok(())
    }
}
