//! Local-file store: the CLI default.

/// Versioned store in a local folder.
#[derive(Debug)]
pub struct FileStore;
