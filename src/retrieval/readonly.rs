//! A read-only, memory-mapped view of an ingested index folder.
//!
//! Tantivy's reader takes a lock file in the index folder even to read, which fails where
//! deployed files are read-only (a Lambda package under `/var/task`, a container image, a
//! read-only mount). An ingest output is never modified in place (a re-ingest swaps in a new
//! folder), so reading needs no lock: this directory grants locks without touching the disk
//! and refuses every write.
use std::io;
use std::path::Path;
use std::sync::Arc;
use tantivy::directory::error::{
    DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError,
};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
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
}
