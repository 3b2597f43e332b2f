//! Local-file store: the CLI default.
//!
//! One JSON file per key in a folder. For a key encoded as the file-name stem `S`
//! (see [`file_stem`]):
//!
//! - `S.json` holds the envelope `{"version", "lease", "expires_at_ms", "body"}` (body in
//!   base64, since it is opaque bytes).
//! - `S.lock` is empty. An exclusive OS lock on it (`File::lock`) serialises writers across
//!   threads *and processes*, so two CLI processes resuming the same run cannot both advance
//!   it. The OS drops the lock when its holder exits, so a crash never leaves a stale lock.
//!   Lock files stay in place: deleting one would let a waiter hold a lock on an unlinked
//!   file while a newcomer locks a fresh one.
//! - `S.tmp` receives the next version under the lock and is renamed over `S.json`, so
//!   readers (which take no lock) see the old file or the new one, never a torn one.
//!
//! Cache items ([`CacheStore`]) are files of the same shape, at version 0 with their own
//! `expires_at_ms`, written under the same lock (so two writers never share a `S.tmp`).
//!
//! Writes are not `fsync`ed: a killed process can never leave a partial checkpoint, but a
//! power cut may lose the last step, which a local CLI run can afford.
//! Every blocking call runs inside `tokio::task::spawn_blocking`.

mod items;
mod list;
mod stem;

use super::memory::{expiry_ms, is_expired};
use super::{CacheStore, CheckpointStore, Lease, StoreError, Versioned};
use crate::clock::{Clock, SystemClock};
use async_trait::async_trait;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use stem::file_stem;

/// How long a writer waits for another writer of the same key before giving up (transient).
const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// Versioned store in a local folder, safe across threads and processes.
///
/// With a TTL (`with_ttl`), an item expires that long after its last write and then reads as
/// absent, like a DynamoDB item past its `expires_at`.
pub struct FileStore {
    inner: Arc<Inner>,
    /// Lists items by owner (`list_owned`), when set.
    indexer: Option<Arc<dyn super::Indexer>>,
}

#[derive(Clone)]
struct Inner {
    dir: PathBuf,
    ttl: Option<Duration>,
    clock: Arc<dyn Clock>,
    lock_timeout: Duration,
}

/// What one file holds.
#[derive(Serialize, Deserialize)]
struct Envelope {
    /// The item's key (files written before it was recorded: read back from the file name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    version: u64,
    #[serde(default)]
    lease: Option<Lease>,
    #[serde(default)]
    expires_at_ms: Option<u64>,
    body: String,
}

impl FileStore {
    /// Opens the store in `dir`, creating the folder (and its parents) when missing.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|e| io_error("create folder", &dir, e))?;
        Ok(Self {
            inner: Arc::new(Inner {
                dir,
                ttl: None,
                clock: Arc::new(SystemClock),
                lock_timeout: DEFAULT_LOCK_TIMEOUT,
            }),
            indexer: None,
        })
    }

    /// Items expire `ttl` after their last write.
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        Arc::make_mut(&mut self.inner).ttl = Some(ttl);
        self
    }

    /// Replaces the clock used for expiry (tests pass a [`crate::clock::FakeClock`]).
    #[cfg(test)]
    pub(crate) fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        Arc::make_mut(&mut self.inner).clock = clock;
        self
    }

    /// How long a write waits for a concurrent writer of the same key (default 10 s) before
    /// failing with [`StoreError::Transient`].
    #[cfg(test)]
    pub(crate) fn with_lock_timeout(mut self, timeout: Duration) -> Self {
        Arc::make_mut(&mut self.inner).lock_timeout = timeout;
        self
    }

    /// The file that holds `key` (whether or not it exists yet).
    #[cfg(test)]
    pub(crate) fn path_of(&self, key: &str) -> PathBuf {
        self.inner.dir.join(format!("{}.json", file_stem(key)))
    }
}

impl fmt::Debug for FileStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileStore")
            .field("dir", &self.inner.dir)
            .field("ttl", &self.inner.ttl)
            .field("lock_timeout", &self.inner.lock_timeout)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl CheckpointStore for FileStore {
    async fn get(&self, key: &str) -> Result<Option<Versioned>, StoreError> {
        let inner = Arc::clone(&self.inner);
        let key = key.to_owned();
        blocking(move || inner.get(&key)).await
    }

    async fn put(
        &self,
        key: &str,
        expected: u64,
        body: &[u8],
        lease: Option<&Lease>,
    ) -> Result<u64, StoreError> {
        let inner = Arc::clone(&self.inner);
        let key = key.to_owned();
        let body = BASE64.encode(body);
        let lease = lease.cloned();
        blocking(move || inner.put(&key, expected, body, lease)).await
    }

    fn name(&self) -> &'static str {
        "file"
    }

    /// A read of the folder (fine locally; DynamoDB queries its `by_owner` index).
    async fn list_owned(
        &self,
        owner: &str,
        status: Option<super::ListedStatus>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<super::ListPage, StoreError> {
        self.list(owner, status, limit, cursor).await
    }

    fn threads(&self) -> Option<&dyn super::ThreadStore> {
        Some(self)
    }
}

impl Inner {
    fn data_path(&self, key: &str) -> Result<PathBuf, StoreError> {
        if key.is_empty() {
            return Err(StoreError::Permanent("empty key".to_owned()));
        }
        Ok(self.dir.join(format!("{}.json", file_stem(key))))
    }

    fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    fn get(&self, key: &str) -> Result<Option<Versioned>, StoreError> {
        let path = self.data_path(key)?;
        let now_ms = self.now_ms();
        let Some(envelope) = read_live(&path, now_ms)? else {
            return Ok(None);
        };
        let body = BASE64
            .decode(envelope.body.as_bytes())
            .map_err(|e| corrupt(&path, e))?;
        Ok(Some(Versioned {
            version: envelope.version,
            body,
            lease: envelope.lease,
        }))
    }

    fn put(
        &self,
        key: &str,
        expected: u64,
        body: String,
        lease: Option<Lease>,
    ) -> Result<u64, StoreError> {
        let data = self.data_path(key)?;
        let _lock = lock_exclusive(&data.with_extension("lock"), self.lock_timeout)?;
        // Read the clock and the version only once the lock is held, so nobody can slip a
        // write in between the check and the rename.
        let now_ms = self.now_ms();
        let current = read_live(&data, now_ms)?.map_or(0, |e| e.version);
        if current != expected {
            return Err(StoreError::Conflict {
                key: key.to_owned(),
                expected,
            });
        }
        let version = expected + 1;
        let envelope = Envelope {
            key: Some(key.to_owned()),
            version,
            lease,
            expires_at_ms: expiry_ms(now_ms, self.ttl),
            body,
        };
        write_envelope(&data, &envelope)?;
        Ok(version)
    }

    fn get_cached(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.data_path(key)?;
        let Some(envelope) = read_live(&path, self.now_ms())? else {
            return Ok(None);
        };
        let body = BASE64
            .decode(envelope.body.as_bytes())
            .map_err(|e| corrupt(&path, e))?;
        Ok(Some(body))
    }

    fn put_cached(&self, key: &str, body: String, ttl: Duration) -> Result<(), StoreError> {
        let data = self.data_path(key)?;
        let _lock = lock_exclusive(&data.with_extension("lock"), self.lock_timeout)?;
        let envelope = Envelope {
            key: Some(key.to_owned()),
            version: 0,
            lease: None,
            expires_at_ms: expiry_ms(self.now_ms(), Some(ttl)),
            body,
        };
        write_envelope(&data, &envelope)
    }
}

#[async_trait]
impl CacheStore for FileStore {
    async fn get_cached(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let inner = Arc::clone(&self.inner);
        let key = key.to_owned();
        blocking(move || inner.get_cached(&key)).await
    }

    async fn put_cached(&self, key: &str, body: &[u8], ttl: Duration) -> Result<(), StoreError> {
        let inner = Arc::clone(&self.inner);
        let key = key.to_owned();
        let body = BASE64.encode(body);
        blocking(move || inner.put_cached(&key, body, ttl)).await
    }
}

/// Replaces the file at `data` with `envelope`: written to `S.tmp`, then renamed over it, so
/// readers never see a torn file. The caller holds the key's lock.
fn write_envelope(data: &Path, envelope: &Envelope) -> Result<(), StoreError> {
    let json = serde_json::to_vec(envelope)
        .map_err(|e| StoreError::Permanent(format!("cannot encode {}: {e}", data.display())))?;
    let tmp = data.with_extension("tmp");
    fs::write(&tmp, json).map_err(|e| io_error("write", &tmp, e))?;
    fs::rename(&tmp, data).map_err(|e| io_error("replace", data, e))
}

/// Runs blocking file work off the async workers.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| StoreError::Permanent(format!("file store task failed: {e}")))?
}

/// The envelope at `path`, or `None` when the file is absent or the item has expired.
fn read_live(path: &Path, now_ms: u64) -> Result<Option<Envelope>, StoreError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error("read", path, e)),
    };
    let envelope: Envelope = serde_json::from_slice(&bytes).map_err(|e| corrupt(path, e))?;
    Ok((!is_expired(envelope.expires_at_ms, now_ms)).then_some(envelope))
}

/// Takes the exclusive OS lock on `path`, polling until `timeout`. Dropping the returned file
/// releases the lock.
fn lock_exclusive(path: &Path, timeout: Duration) -> Result<File, StoreError> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| io_error("open lock", path, e))?;
    // Not an expiry: this bounds a blocking wait for another process's file lock, which only
    // real time can end, so it reads the monotonic clock rather than the injected one.
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(TryLockError::WouldBlock) if started.elapsed() < timeout => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(StoreError::Transient(format!(
                    "timed out after {timeout:?} waiting for lock {}",
                    path.display()
                )))
            }
            Err(TryLockError::Error(e)) => return Err(io_error("lock", path, e)),
        }
    }
}

fn io_error(action: &str, path: &Path, err: io::Error) -> StoreError {
    let message = format!("cannot {action} {}: {err}", path.display());
    match err.kind() {
        io::ErrorKind::Interrupted | io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            StoreError::Transient(message)
        }
        _ => StoreError::Permanent(message),
    }
}

fn corrupt(path: &Path, err: impl fmt::Display) -> StoreError {
    StoreError::Permanent(format!("corrupt checkpoint file {}: {err}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;

    #[tokio::test]
    async fn files_are_inspectable_json() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path().join("nested/runs")).unwrap();
        let lease = Lease {
            owner: "inv-1".into(),
            expires_at_ms: 42,
        };
        store.put("run#a", 0, b"hi", Some(&lease)).await.unwrap();
        let json: serde_json::Value =
            serde_json::from_slice(&fs::read(store.path_of("run#a")).unwrap()).unwrap();
        assert_eq!(json["version"], 1);
        assert_eq!(json["body"], "aGk=");
        assert_eq!(json["lease"]["owner"], "inv-1");
        assert_eq!(json["expires_at_ms"], serde_json::Value::Null);
    }

    #[tokio::test]
    async fn corrupt_files_are_permanent_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path()).unwrap();
        fs::write(store.path_of("run#a"), b"{not json").unwrap();
        for err in [
            store.get("run#a").await.unwrap_err(),
            store.put("run#a", 0, b"x", None).await.unwrap_err(),
        ] {
            assert!(matches!(err, StoreError::Permanent(_)), "{err}");
            assert!(err.to_string().contains("corrupt checkpoint file"), "{err}");
            assert!(err.to_string().contains("run%23a.json"), "{err}");
        }
    }

    #[tokio::test]
    async fn a_held_lock_times_out_as_transient() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path())
            .unwrap()
            .with_lock_timeout(Duration::from_millis(50));
        let held = lock_exclusive(
            &store.path_of("run#a").with_extension("lock"),
            Duration::ZERO,
        )
        .unwrap();
        let err = store.put("run#a", 0, b"x", None).await.unwrap_err();
        assert!(matches!(err, StoreError::Transient(_)), "{err}");
        drop(held);
        assert_eq!(store.put("run#a", 0, b"x", None).await.unwrap(), 1);
    }

    #[tokio::test]
    async fn expiry_follows_the_injected_clock() {
        let dir = tempfile::tempdir().unwrap();
        let now = Arc::new(FakeClock::at_ms(1_000_000));
        let clock: Arc<dyn Clock> = now.clone();
        let store = FileStore::open(dir.path())
            .unwrap()
            .with_ttl(Duration::from_secs(1))
            .with_clock(clock);
        store.put("run#a", 0, b"x", None).await.unwrap();
        now.advance(Duration::from_millis(999));
        assert!(store.get("run#a").await.unwrap().is_some());
        now.advance(Duration::from_millis(1));
        assert_eq!(store.get("run#a").await.unwrap(), None);
        assert_eq!(store.put("run#a", 0, b"y", None).await.unwrap(), 1);
    }

    #[tokio::test]
    async fn cache_items_expire_after_their_own_ttl() {
        let dir = tempfile::tempdir().unwrap();
        let now = Arc::new(FakeClock::at_ms(1_000_000));
        let clock: Arc<dyn Clock> = now.clone();
        let store = FileStore::open(dir.path())
            .unwrap()
            .with_ttl(Duration::from_secs(3_600))
            .with_clock(clock);
        store
            .put_cached("cache#a", b"reply", Duration::from_secs(2))
            .await
            .unwrap();
        let json: serde_json::Value =
            serde_json::from_slice(&fs::read(store.path_of("cache#a")).unwrap()).unwrap();
        assert_eq!(json["expires_at_ms"], 1_002_000);
        now.advance(Duration::from_millis(1_999));
        assert_eq!(
            store.get_cached("cache#a").await.unwrap().unwrap(),
            b"reply"
        );
        now.advance(Duration::from_millis(1));
        assert_eq!(store.get_cached("cache#a").await.unwrap(), None);
    }

    #[tokio::test]
    async fn empty_keys_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path()).unwrap();
        assert!(matches!(
            store.get("").await.unwrap_err(),
            StoreError::Permanent(_)
        ));
    }
}
