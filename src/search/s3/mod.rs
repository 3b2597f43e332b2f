//! Bundles on S3: published under their content hash, found through a small pointer object.
//!
//! Layout under `s3://BUCKET/PREFIX/`:
//! - `bundles/<content hash>/...`: every file of a bundle, the manifest uploaded last;
//! - `current.json`: the pointer, `{"format", "version", "published_at"}`.
//!
//! Publishing uploads a bundle (unless that version is already there) and then overwrites the
//! pointer, one `PutObject`, which S3 makes visible atomically: a reader that follows the
//! pointer sees the old bundle or the new one, never a mix. Old bundles stay; a rollback is
//! pointing back at one ([`BundleStore::point`]).

mod fetch;
mod location;

pub use location::S3Location;

use super::bundle::{self, Manifest, MANIFEST};
use super::RetrievalError;
use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// Name of the pointer object under the prefix.
pub(crate) const POINTER: &str = "current.json";
/// `format` of the pointer object.
const POINTER_FORMAT: &str = "bounded-rag-kb-pointer";
/// How long one bundle transfer may take, SDK retries included.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(300);

/// The pointer object: which bundle readers load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pointer {
    /// Always `bounded-rag-kb-pointer`.
    pub format: String,
    /// The content hash of the bundle pointed at.
    pub version: String,
    /// When the pointer was written (RFC 3339).
    pub published_at: String,
}

/// A published bundle as `kb list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Published {
    /// Content hash.
    pub version: String,
    /// Whether the pointer names it.
    pub current: bool,
    /// Its manifest.
    pub manifest: Manifest,
}

/// An S3 client for the bundles under one location.
#[derive(Debug, Clone)]
pub struct BundleStore {
    client: aws_sdk_s3::Client,
    location: S3Location,
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

    /// Uploads the bundle in `dir` (checked first: manifest, sizes, SHA-256) under its
    /// content hash, unless that version is already there, then points readers at it.
    pub async fn publish(&self, dir: &Path) -> Result<Published, RetrievalError> {
        let manifest_path = dir.join(MANIFEST);
        let bytes =
            std::fs::read(&manifest_path).map_err(|e| RetrievalError::io(&manifest_path, e))?;
        let manifest = Manifest::parse(&bytes, &manifest_path)?;
        // Opening it proves the index and vectors are whole before anything is uploaded.
        drop(bundle::open_dir(dir)?);
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
    pub async fn manifest(&self, version: &str) -> Result<Manifest, RetrievalError> {
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
        self.location.key(&format!("bundles/{version}/{path}"))
    }

    async fn put(&self, key: &str, body: Vec<u8>) -> Result<(), RetrievalError> {
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

    fn error(&self, key: &str, message: String) -> RetrievalError {
        RetrievalError::S3 {
            location: self.location.url(key),
            message,
        }
    }

    fn sdk_error<E>(&self, key: &str, e: aws_sdk_s3::error::SdkError<E>) -> RetrievalError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        // S3's own code and message, else the error and its causes: never the SDK's debug dump.
        let message = match (e.code(), e.message()) {
            (Some(code), Some(message)) => format!("S3 answered {code}: {message}"),
            (Some(code), None) => format!("S3 answered {code}"),
            _ => crate::http::error_chain(&e),
        };
        self.error(key, message)
    }
}

enum GetError {
    NotFound,
    Other(RetrievalError),
}

fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| now.unix_timestamp().to_string())
}
