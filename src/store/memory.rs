//! In-memory store for tests and single-process use.

/// Versioned in-memory store.
#[derive(Debug, Default)]
pub struct MemoryStore;
