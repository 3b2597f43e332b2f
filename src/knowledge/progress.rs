//! Where the progress of a long write goes: ingest's and sync's stages (embedding, indexing,
//! writing), reported by them and by the store's writer they hand passages to.

/// Reports the progress of an ingest (the CLI draws a bar on a terminal).
pub trait Progress: Send + Sync {
    /// A stage starts (`embedding`, `indexing`) with `total` units of work.
    fn stage(&self, _name: &'static str, _total: u64) {}
    /// `n` more units of the current stage are done.
    fn advance(&self, _n: u64) {}
    /// `n` units of the current stage were done by an earlier, interrupted run: done, but not
    /// part of this run's rate.
    fn resumed(&self, n: u64) {
        self.advance(n);
    }
    /// The current stage is over.
    fn finish(&self) {}
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NoProgress;

impl Progress for NoProgress {}
