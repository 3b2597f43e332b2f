//! Read-only views of an ingested index: memory-mapped from a folder ([`ReadOnlyDirectory`]) or
//! held in memory ([`MemoryDirectory`], a bundle downloaded from S3 that fits in memory).
//!
//! Tantivy's reader takes a lock file in the index folder even to read, which fails where
//! deployed files are read-only (a Lambda package under `/var/task`, a container image, a
//! read-only mount). An ingest output is never modified in place (a re-ingest swaps in a new
//! folder), so reading needs no lock: this directory grants locks without touching the disk
//! and refuses every write.
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tantivy::directory::error::{
    DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError,
};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, OwnedBytes, WatchCallback,
    WatchHandle, WritePtr,
};

/// [`MmapDirectory`] for reading only.
#[derive(Debug, Clone)]
pub(crate) struct ReadOnlyDirectory(MmapDirectory);

impl ReadOnlyDirectory {
    /// Opens `path` without writing to it.
    pub(crate) fn open(path: &Path) -> Result<Self, OpenDirectoryError> {
        MmapDirectory::open(path).map(Self)
    }
}

fn read_only() -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        "the index is opened read-only",
    )
}

impl Directory for ReadOnlyDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.0.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        Err(DeleteError::IoError {
            io_error: Arc::new(read_only()),
            filepath: path.to_path_buf(),
        })
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.0.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        Err(OpenWriteError::IoError {
            io_error: Arc::new(read_only()),
            filepath: path.to_path_buf(),
        })
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.0.atomic_read(path)
    }

    fn atomic_write(&self, _path: &Path, _data: &[u8]) -> io::Result<()> {
        Err(read_only())
    }

    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, _lock: &Lock) -> Result<DirectoryLock, LockError> {
        // Nothing writes to an ingest output, so readers need not exclude anyone.
        Ok(DirectoryLock::from(Box::new(())))
    }

    fn watch(&self, _watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        // The index never changes after ingest: nothing to watch.
        Ok(WatchHandle::empty())
    }
}

/// Index files held in memory (path relative to the index folder to bytes), read-only.
#[derive(Debug, Clone, Default)]
pub(crate) struct MemoryDirectory(Arc<HashMap<PathBuf, OwnedBytes>>);

impl MemoryDirectory {
    /// A directory over these files.
    pub(crate) fn new(files: HashMap<PathBuf, OwnedBytes>) -> Self {
        Self(Arc::new(files))
    }

    fn file(&self, path: &Path) -> Result<&OwnedBytes, OpenReadError> {
        self.0
            .get(path)
            .ok_or_else(|| OpenReadError::FileDoesNotExist(path.to_path_buf()))
    }
}

impl Directory for MemoryDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        Ok(Arc::new(self.file(path)?.clone()))
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        Err(DeleteError::IoError {
            io_error: Arc::new(read_only()),
            filepath: path.to_path_buf(),
        })
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        Ok(self.0.contains_key(path))
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        Err(OpenWriteError::IoError {
            io_error: Arc::new(read_only()),
            filepath: path.to_path_buf(),
        })
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        Ok(self.file(path)?.as_slice().to_vec())
    }

    fn atomic_write(&self, _path: &Path, _data: &[u8]) -> io::Result<()> {
        Err(read_only())
    }

    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, _lock: &Lock) -> Result<DirectoryLock, LockError> {
        Ok(DirectoryLock::from(Box::new(())))
    }

    fn watch(&self, _watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        Ok(WatchHandle::empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pass_through_and_writes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("meta.json"), b"{}").unwrap();
        let ro = ReadOnlyDirectory::open(dir.path()).unwrap();
        assert_eq!(ro.atomic_read(Path::new("meta.json")).unwrap(), b"{}");
        assert!(ro.exists(Path::new("meta.json")).unwrap());
        assert!(ro.atomic_write(Path::new("meta.json"), b"x").is_err());
        assert!(ro.open_write(Path::new("new")).is_err());
        assert!(ro.delete(Path::new("meta.json")).is_err());
        let lock = Lock {
            filepath: ".tantivy-meta.lock".into(),
            is_blocking: true,
        };
        drop(ro.acquire_lock(&lock).unwrap());
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "nothing created");
    }

    #[test]
    fn memory_directory_serves_its_files_and_refuses_writes() {
        let files = HashMap::from([(PathBuf::from("meta.json"), OwnedBytes::new(b"{}".to_vec()))]);
        let dir = MemoryDirectory::new(files);
        assert_eq!(dir.atomic_read(Path::new("meta.json")).unwrap(), b"{}");
        assert!(!dir.exists(Path::new("other")).unwrap());
        assert!(dir.atomic_read(Path::new("other")).is_err());
        assert!(dir.open_write(Path::new("new")).is_err());
        assert!(dir.get_file_handle(Path::new("meta.json")).is_ok());
    }
}
