//! Reading bundles published to S3: the pointer, a version's manifest, the list of versions,
//! and loading one (`fetch`). Publishing (`kb publish`, `kb use`) is `publish.rs`
//! (which adds `BundleStore::publish` and `BundleStore::point`); the key layout both follow is
//! the bundle format's (`format/published.rs`).
//!
//! Publishing overwrites the pointer with one `PutObject`, which S3 makes visible atomically:
//! a reader that follows the pointer sees the old bundle or the new one, never a mix. Old
//! bundles stay; a rollback is pointing back at one.
use crate::aws::S3Location;
use crate::kb::bundle::format::{
    bundle_key, Manifest, Pointer, Published, MANIFEST, POINTER, POINTER_FORMAT,
};
use crate::search::RetrievalError;
use aws_sdk_s3::error::ProvideErrorMetadata;
use std::path::Path;
use std::time::Duration;

/// How long one bundle transfer may take, SDK retries included.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(300);

/// An S3 client for the bundles under one location.
#[derive(Debug, Clone)]
pub struct BundleStore {
    pub(crate) client: aws_sdk_s3::Client,
    pub(crate) location: S3Location,
}

/// An S3 client from `sdk`: path-style addressing when an endpoint is configured (moto,
/// MinIO, LocalStack), and a transfer-sized timeout.
pub fn client(sdk: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
    let custom_endpoint =
        sdk.endpoint_url().is_some() || std::env::var_os("AWS_ENDPOINT_URL_S3").is_some();
    let config = aws_sdk_s3::config::Builder::from(sdk)
        .force_path_style(custom_endpoint)
        .timeout_config(crate::aws::timeouts(sdk, TRANSFER_TIMEOUT))
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

impl BundleStore {
    /// Bundles under `location`, through `client`.
    pub fn new(client: aws_sdk_s3::Client, location: S3Location) -> Self {
        Self { client, location }
    }

    /// Where the bundles are.
    pub fn location(&self) -> &S3Location {
        &self.location
    }

    /// The pointer: the version readers load.
    pub async fn pointer(&self) -> Result<Pointer, RetrievalError> {
        let key = self.location.key(POINTER);
        let bytes = self.get(&key).await.map_err(|e| match e {
            GetError::NotFound => self.error(
                &key,
                "no bundle is published here (no pointer); run `bounded-rag kb publish`".into(),
            ),
            GetError::Other(e) => e,
        })?;
        let pointer: Pointer = serde_json::from_slice(&bytes)
            .map_err(|e| self.error(&key, format!("the pointer is not valid: {e}")))?;
        let hex64 =
            pointer.version.len() == 64 && pointer.version.bytes().all(|b| b.is_ascii_hexdigit());
        if pointer.format != POINTER_FORMAT || !hex64 {
            return Err(self.error(&key, "the pointer is not a bundle pointer".into()));
        }
        Ok(pointer)
    }

    /// The manifest of a published `version`.
    pub(crate) async fn manifest(&self, version: &str) -> Result<Manifest, RetrievalError> {
        let key = self.bundle_key(version, MANIFEST);
        let bytes = self.get(&key).await.map_err(|e| match e {
            GetError::NotFound => self.error(&key, format!("no bundle {version} is published")),
            GetError::Other(e) => e,
        })?;
        let manifest = Manifest::parse(&bytes, Path::new(&self.location.url(&key)))?;
        if manifest.content_hash != version {
            return Err(self.error(&key, "the manifest is of another version".into()));
        }
        Ok(manifest)
    }

    /// Every published bundle, newest first, the current one marked.
    pub async fn list(&self) -> Result<Vec<Published>, RetrievalError> {
        let prefix = self.location.key("bundles/");
        let current = self.pointer().await.ok().map(|p| p.version);
        let mut versions: Vec<String> = Vec::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.location.bucket)
            .prefix(&prefix)
            .delimiter("/")
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| self.sdk_error(&prefix, e))?;
            for common in page.common_prefixes() {
                if let Some(p) = common.prefix() {
                    let version = p.trim_start_matches(&prefix).trim_end_matches('/');
                    versions.push(String::from(version));
                }
            }
        }
        let mut out = Vec::new();
        for version in versions {
            // A folder without a manifest is an upload that never finished: not a bundle.
            if let Ok(manifest) = self.manifest(&version).await {
                out.push(Published {
                    current: current.as_deref() == Some(version.as_str()),
                    version,
                    manifest,
                });
            }
        }
        out.sort_by(|a, b| b.manifest.created_at.cmp(&a.manifest.created_at));
        Ok(out)
    }

    pub(crate) fn bundle_key(&self, version: &str, path: &str) -> String {
        bundle_key(&self.location, version, path)
    }

    /// The object at `key` of the bucket (an object kept beside the bundles: the sync's under
    /// `.sync/`), `None` when there is none.
    pub(crate) async fn get_object(&self, key: &str) -> Result<Option<Vec<u8>>, RetrievalError> {
        match self.get(key).await {
            Ok(body) => Ok(Some(body)),
            Err(GetError::NotFound) => Ok(None),
            Err(GetError::Other(e)) => Err(e),
        }
    }

    async fn get(&self, key: &str) -> Result<Vec<u8>, GetError> {
        let out = self
            .client
            .get_object()
            .bucket(&self.location.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| match e.as_service_error() {
                Some(s) if s.is_no_such_key() => GetError::NotFound,
                _ => GetError::Other(self.sdk_error(key, e)),
            })?;
        let body = out
            .body
            .collect()
            .await
            .map_err(|e| GetError::Other(self.error(key, format!("download failed: {e}"))))?;
        Ok(body.into_bytes().to_vec())
    }

    pub(crate) fn error(&self, key: &str, message: String) -> RetrievalError {
        RetrievalError::S3 {
            location: self.location.url(key),
            message,
        }
    }

    pub(crate) fn sdk_error<E>(
        &self,
        key: &str,
        e: aws_sdk_s3::error::SdkError<E>,
    ) -> RetrievalError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        // S3's own code and message, else the error and its causes: never the SDK's debug dump.
        let message = match (e.code(), e.message()) {
            (Some(code), Some(message)) => format!("S3 answered {code}: {message}"),
            (Some(code), None) => format!("S3 answered {code}"),
            _ => crate::outbound::error_chain(&e),
        };
        self.error(key, message)
    }
}

enum GetError {
    NotFound,
    Other(RetrievalError),
}
