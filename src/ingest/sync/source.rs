//! Where a sync reads documents from: a local folder or `s3://BUCKET/PREFIX`. Listing gives
//! every file's relative path, size and fingerprint without reading a byte; only the files a
//! sync finds changed are fetched. The files that count are the ones a folder ingest reads:
//! hidden entries and folders holding a bundle (`kb-manifest.json`) are passed over.
use super::state::FailReason;
use crate::aws::S3Location;
use crate::ingest::sources::files_under;
use crate::ingest::IngestError;
use crate::kb::MANIFEST;
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

/// A sync's source of documents.
#[derive(Debug, Clone)]
pub enum SyncSource {
    /// A local folder, walked recursively.
    Folder(PathBuf),
    /// Every object under a prefix.
    S3 {
        /// The bucket's client.
        client: aws_sdk_s3::Client,
        /// The bucket and prefix.
        location: S3Location,
    },
}

/// One file found by a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    /// Relative, `/`-separated path (the `kb://` path).
    pub rel: String,
    /// Size and modification time, or the ETag: equal to the last sync's means unchanged.
    pub fingerprint: String,
    pub size: u64,
    /// A local file's modification time (Unix nanoseconds); `None` for an S3 object, whose
    /// ETag changes with every write.
    pub modified: Option<u128>,
}

/// How close to a listing a modification time must be to be distrusted: file systems keep
/// modification times at a coarse granularity, so a file written twice within it keeps its
/// size and time (git's "racy clean" entries).
const RACY_NS: u128 = 2_000_000_000;

impl Listed {
    /// Whether the fingerprint cannot be trusted against a state listed at `listed_at`: the
    /// file was modified within [`RACY_NS`] of that listing. Such a file is fetched and
    /// compared by hash (its reader does not run again when the bytes are the same).
    pub(crate) fn racy(&self, listed_at: u128) -> bool {
        self.modified
            .is_some_and(|m| m.saturating_add(RACY_NS) >= listed_at)
    }
}

/// Now, in Unix nanoseconds.
pub(crate) fn now_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

impl SyncSource {
    /// The folder (canonical) or the `s3://` URL, as ingest names a source.
    pub(crate) fn root(&self) -> PathBuf {
        match self {
            Self::Folder(dir) => dir.canonicalize().unwrap_or_else(|_| dir.clone()),
            Self::S3 { location, .. } => PathBuf::from(location.to_string()),
        }
    }

    /// Where `rel` is, for messages.
    pub(crate) fn path_of(&self, rel: &str) -> PathBuf {
        match self {
            Self::Folder(dir) => dir.join(rel),
            Self::S3 { location, .. } => PathBuf::from(location.url(&location.key(rel))),
        }
    }

    /// Every file that counts, sorted by relative path.
    pub(crate) async fn list(&self) -> Result<Vec<Listed>, IngestError> {
        let mut out = match self {
            Self::Folder(dir) => list_dir(dir)?,
            Self::S3 { client, location } => list_s3(client, location).await?,
        };
        out.sort_by(|a, b| a.rel.cmp(&b.rel));
        Ok(out)
    }

    /// The bytes of `rel`.
    pub(crate) async fn fetch(&self, rel: &str) -> Result<Vec<u8>, FailReason> {
        let fail = |detail: String| FailReason::Unfetchable { detail };
        match self {
            Self::Folder(dir) => {
                let path = dir.join(rel);
                tokio::fs::read(&path)
                    .await
                    .map_err(|e| fail(e.to_string()))
            }
            Self::S3 { client, location } => {
                let out = client
                    .get_object()
                    .bucket(&location.bucket)
                    .key(location.key(rel))
                    .send()
                    .await
                    .map_err(|e| fail(crate::outbound::error_chain(&e)))?;
                let body = out.body.collect().await.map_err(|e| fail(e.to_string()))?;
                Ok(body.into_bytes().to_vec())
            }
        }
    }
}

/// Whether a path component hides what is below it (`.git`, `.sync`, dotfiles).
fn hidden(rel: &str) -> bool {
    rel.split('/').any(|part| part.starts_with('.'))
}

fn list_dir(root: &Path) -> Result<Vec<Listed>, IngestError> {
    let mut out = Vec::new();
    for (path, rel) in files_under(root)? {
        let Ok(meta) = fs::metadata(&path) else {
            continue;
        };
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        out.push(Listed {
            rel,
            fingerprint: format!("{}:{modified}", meta.len()),
            size: meta.len(),
            modified: Some(modified),
        });
    }
    Ok(out)
}

async fn list_s3(
    client: &aws_sdk_s3::Client,
    location: &S3Location,
) -> Result<Vec<Listed>, IngestError> {
    let prefix = if location.prefix.is_empty() {
        String::new()
    } else {
        format!("{}/", location.prefix)
    };
    let mut objects = Vec::new();
    let mut pages = client
        .list_objects_v2()
        .bucket(&location.bucket)
        .prefix(&prefix)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = page.map_err(|e| IngestError::S3 {
            location: location.url(&prefix),
            message: crate::outbound::error_chain(&e),
        })?;
        for object in page.contents() {
            let Some(key) = object.key() else { continue };
            let rel = key.strip_prefix(&prefix).unwrap_or(key);
            if rel.is_empty() || rel.ends_with('/') || hidden(rel) {
                continue;
            }
            let etag = object.e_tag().unwrap_or_default().trim_matches('"');
            objects.push(Listed {
                rel: rel.to_owned(),
                fingerprint: format!("etag:{etag}"),
                size: object.size().unwrap_or(0).max(0) as u64,
                modified: None,
            });
        }
    }
    // A folder holding a bundle's manifest holds an index, not sources.
    let bundles: HashSet<&str> = objects
        .iter()
        .filter_map(|o| o.rel.strip_suffix(MANIFEST))
        .collect();
    // (The root's own manifest does not count, as a folder ingest does not check the root.)
    let in_bundle = |rel: &str| bundles.iter().any(|f| !f.is_empty() && rel.starts_with(f));
    let keep: Vec<bool> = objects.iter().map(|o| !in_bundle(&o.rel)).collect();
    Ok(objects
        .into_iter()
        .zip(keep)
        .filter_map(|(o, keep)| keep.then_some(o))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_lists_what_ingest_reads_without_reading_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("sub")).unwrap();
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::create_dir_all(root.join("old-bundle")).unwrap();
        fs::write(root.join("b.md"), "# B").unwrap();
        fs::write(root.join("sub/a.txt"), "ay").unwrap();
        fs::write(root.join(".git/x.md"), "hidden").unwrap();
        fs::write(root.join("old-bundle").join(MANIFEST), "{}").unwrap();
        let listed = list_dir(root).unwrap();
        let mut rels: Vec<&str> = listed.iter().map(|l| l.rel.as_str()).collect();
        rels.sort();
        assert_eq!(rels, ["b.md", "sub/a.txt"]);
        let b = listed.iter().find(|l| l.rel == "b.md").unwrap();
        assert_eq!(b.size, 3);
        assert!(b.fingerprint.starts_with("3:"), "{}", b.fingerprint);
        assert!(hidden("a/.sync/state") && !hidden("a/b.md"));
    }
}
