//! The layout of bundles published to S3, for the publisher (ingest's `kb publish`, `kb use`)
//! and the readers (search's `kb list`, the refreshed knowledge base).
//!
//! Under `s3://BUCKET/PREFIX/`: `bundles/<content hash>/...` holds every file of a bundle, the
//! manifest uploaded last; `current.json` is the [`Pointer`] naming the version readers load.
use super::manifest::Manifest;
use crate::aws::S3Location;
use serde::{Deserialize, Serialize};

/// Name of the pointer object under the prefix.
pub(crate) const POINTER: &str = "current.json";
/// `format` of the pointer object.
pub(crate) const POINTER_FORMAT: &str = "bounded-rag-kb-pointer";

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

/// The key of `path` inside the published bundle `version` under `location`.
pub(crate) fn bundle_key(location: &S3Location, version: &str, path: &str) -> String {
    location.key(&format!("bundles/{version}/{path}"))
}
