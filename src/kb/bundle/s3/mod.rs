//! Bundles on S3: published under their content hash, found through a small pointer object.
//!
//! Layout under `s3://BUCKET/PREFIX/`:
//! - `bundles/<content hash>/...`: every file of a bundle, the manifest uploaded last;
//! - `current.json`: the pointer, `{"format", "version", "published_at"}`.
//!
//! Here is the reading side ([`BundleStore`]: pointer, manifests, list, fetch); publishing is
//! `publish` (`BundleStore::publish`, `point`).

mod fetch;
mod publish;
mod store;

pub use store::{client, BundleStore};
