//! [`LocalItems`] for the file store: what threads ([`crate::store::ThreadStore`]) need
//! besides conditional puts. An owner's listing reads the files whose name starts like the
//! owner's keys (the first 64 bytes of a stem are kept even when a long key is hashed, so a
//! few other files may match: the caller checks the owner inside each item). A removal takes
//! the key's lock, like a write.

use super::{file_stem, io_error, lock_exclusive, read_live, Inner};
use crate::store::thread::LocalItems;
use crate::store::{FileStore, StoreError};
use async_trait::async_trait;
use base64::Engine as _;
use std::fs;
use std::io;
use std::sync::Arc;

/// Bytes of a stem that survive hashing (see `file_stem`).
const KEPT_STEM: usize = 64;

#[async_trait]
impl LocalItems for FileStore {
    async fn bodies_with_prefix(&self, prefix: &str) -> Result<Vec<Vec<u8>>, StoreError> {
        let inner = Arc::clone(&self.inner);
        let mut stem = file_stem(prefix);
        stem.truncate(KEPT_STEM);
        super::blocking(move || inner.bodies_with_stem(&stem)).await
    }

    async fn remove(&self, key: &str, expected: Option<u64>) -> Result<(), StoreError> {
        let inner = Arc::clone(&self.inner);
        let key = key.to_owned();
        super::blocking(move || inner.remove(&key, expected)).await
    }

    fn now_ms(&self) -> u64 {
        self.inner.now_ms()
    }
}

impl Inner {
    fn bodies_with_stem(&self, stem: &str) -> Result<Vec<Vec<u8>>, StoreError> {
        let entries = fs::read_dir(&self.dir).map_err(|e| io_error("list", &self.dir, e))?;
        let now_ms = self.now_ms();
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error("list", &self.dir, e))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !name.starts_with(stem) || !name.ends_with(".json") {
                continue;
            }
            let Some(envelope) = read_live(&entry.path(), now_ms)? else {
                continue;
            };
            if let Ok(body) = super::BASE64.decode(envelope.body.as_bytes()) {
                out.push(body);
            }
        }
        Ok(out)
    }

    fn remove(&self, key: &str, expected: Option<u64>) -> Result<(), StoreError> {
        let data = self.data_path(key)?;
        let _lock = lock_exclusive(&data.with_extension("lock"), self.lock_timeout)?;
        let current = read_live(&data, self.now_ms())?.map_or(0, |e| e.version);
        if let Some(expected) = expected.filter(|e| *e != current) {
            return Err(StoreError::Conflict {
                key: key.to_owned(),
                expected,
            });
        }
        match fs::remove_file(&data) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_error("remove", &data, e)),
            _ => Ok(()),
        }
    }
}
