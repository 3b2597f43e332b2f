//! Every shape of key the checkpoint stores hold: [`StoreKey`] for an item's key (DynamoDB's
//! `pk`, the memory map's key, the file store's file name), which it also reads back, so no two
//! kinds of item can ever share a key; [`OwnerKey`] for what the `by_owner` index lists an item
//! under; [`SortKey`] for an item's place in its DynamoDB partition (`sk`). The strings are a
//! contract with stored data: never change them.

use std::fmt;

/// A key of the checkpoint store: a kind and an id, written `kind#id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreKey<'a> {
    /// A run's checkpoint: `run#<run id>`.
    Run(&'a str),
    /// A caller's idempotency key: `idem#<hex sha256 of the caller digest and the key>`.
    Idempotency(&'a str),
    /// A caller's active-run slots: `active#<caller digest>`.
    ActiveRuns(&'a str),
    /// A cached model reply: `cache#<hex sha256 of the request>`.
    Cache(&'a str),
    /// A conversation thread's head: `thread#<caller digest>#<thread id>`.
    Thread(&'a str),
    /// One turn of a thread in the local stores: `turn#<caller digest>#<thread id>#<turn>`
    /// (DynamoDB keeps turns under the thread's own `pk` instead).
    ThreadTurn(&'a str),
    /// The claim on a run's completion event: `finished#<run id>`.
    Finished(&'a str),
    /// A caller's request counter: `rate#<caller digest>` (one per caller), or on DynamoDB
    /// `rate#<caller digest>#<minute>` (one per caller and window).
    Rate(&'a str),
    /// The sync function's records of one destination: `sync#<s3://BUCKET/PREFIX>` (on
    /// DynamoDB the partition, each record a [`SyncSortKey`] in it; the local stores append
    /// `#` and the sort key).
    Sync(&'a str),
}

impl<'a> StoreKey<'a> {
    /// The key's kind, up to and including the `#`.
    fn prefix(self) -> &'static str {
        match self {
            StoreKey::Run(_) => "run#",
            StoreKey::Idempotency(_) => "idem#",
            StoreKey::ActiveRuns(_) => "active#",
            StoreKey::Cache(_) => "cache#",
            StoreKey::Thread(_) => "thread#",
            StoreKey::ThreadTurn(_) => "turn#",
            StoreKey::Finished(_) => "finished#",
            StoreKey::Rate(_) => "rate#",
            StoreKey::Sync(_) => "sync#",
        }
    }

    /// The id after the prefix.
    fn id(self) -> &'a str {
        match self {
            StoreKey::Run(id)
            | StoreKey::Idempotency(id)
            | StoreKey::ActiveRuns(id)
            | StoreKey::Cache(id)
            | StoreKey::Thread(id)
            | StoreKey::ThreadTurn(id)
            | StoreKey::Finished(id)
            | StoreKey::Rate(id)
            | StoreKey::Sync(id) => id,
        }
    }

    /// Reads a stored key back; `None` for a key of no known kind.
    pub(crate) fn parse(key: &'a str) -> Option<Self> {
        let (kind, id) = key.split_once('#')?;
        Some(match kind {
            "run" => StoreKey::Run(id),
            "idem" => StoreKey::Idempotency(id),
            "active" => StoreKey::ActiveRuns(id),
            "cache" => StoreKey::Cache(id),
            "thread" => StoreKey::Thread(id),
            "turn" => StoreKey::ThreadTurn(id),
            "finished" => StoreKey::Finished(id),
            "rate" => StoreKey::Rate(id),
            "sync" => StoreKey::Sync(id),
            _ => return None,
        })
    }
}

impl fmt::Display for StoreKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.prefix())?;
        f.write_str(self.id())
    }
}

/// What the `by_owner` index lists a head item under (its `owner` attribute): a kind and a
/// caller digest, written `kind#digest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OwnerKey<'a> {
    /// A caller's runs: `runs#<caller digest>`.
    Runs(&'a str),
    /// A caller's conversation threads (DynamoDB): `threads#<caller digest>`.
    Threads(&'a str),
}

impl fmt::Display for OwnerKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OwnerKey::Runs(digest) => write!(f, "runs#{digest}"),
            OwnerKey::Threads(digest) => write!(f, "threads#{digest}"),
        }
    }
}

/// Where an item sits in its DynamoDB partition (the sort key `sk`) besides the head item
/// ([`SortKey::HEAD`]). Numbers are zero-padded so items sort by them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SortKey {
    /// One chunk of a checkpoint body too large for its head:
    /// `chunk#<version, 20 digits>#<index, 4 digits>`, so one version's chunks sort by index
    /// and its range never overlaps another version's.
    Chunk {
        /// The checkpoint version the chunk belongs to.
        version: u64,
        /// Its place among the version's chunks.
        index: usize,
    },
    /// One finished turn of a thread: `turn#<turn, 10 digits>`.
    Turn(u32),
}

impl SortKey {
    /// The sort key of a partition's head item (a checkpoint, a thread's head, a cache entry,
    /// a counter).
    pub(crate) const HEAD: &'static str = "head";
    /// What every [`SortKey::Turn`] starts with.
    pub(crate) const TURNS: &'static str = "turn#";
}

impl fmt::Display for SortKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SortKey::Chunk { version, index } => write!(f, "chunk#{version:020}#{index:04}"),
            SortKey::Turn(turn) => write!(f, "{}{turn:010}", Self::TURNS),
        }
    }
}

/// Where one of the sync function's records sits under its destination's
/// [`StoreKey::Sync`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SyncSortKey<'a> {
    /// One source document: `doc#<key relative to the source prefix>`.
    Doc(&'a str),
    /// The publish lease and counters: `control`.
    Control,
    /// One finished publish: `job#<number, 10 digits>`, so jobs sort by number.
    Job(u64),
}

impl SyncSortKey<'_> {
    /// What every [`SyncSortKey::Doc`] starts with.
    pub(crate) const DOCS: &'static str = "doc#";
    /// What every [`SyncSortKey::Job`] starts with.
    pub(crate) const JOBS: &'static str = "job#";

    /// The document a [`SyncSortKey::Doc`] names, read back.
    pub(crate) fn doc_of(sort_key: &str) -> Option<&str> {
        sort_key.strip_prefix(Self::DOCS)
    }

    /// The number a [`SyncSortKey::Job`] names, read back.
    pub(crate) fn job_of(sort_key: &str) -> Option<u64> {
        sort_key.strip_prefix(Self::JOBS)?.parse().ok()
    }
}

impl fmt::Display for SyncSortKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncSortKey::Doc(rel) => write!(f, "{}{rel}", Self::DOCS),
            SyncSortKey::Control => f.write_str("control"),
            SyncSortKey::Job(number) => write!(f, "{}{number:010}", Self::JOBS),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_stored_shape_and_read_back() {
        for (key, text) in [
            (StoreKey::Run("r-1"), "run#r-1"),
            (StoreKey::Idempotency("ab12"), "idem#ab12"),
            (StoreKey::ActiveRuns("c0ffee"), "active#c0ffee"),
            (StoreKey::Cache("00ff"), "cache#00ff"),
            (StoreKey::Thread("c0#t-1"), "thread#c0#t-1"),
            (
                StoreKey::ThreadTurn("c0#t-1#0000000001"),
                "turn#c0#t-1#0000000001",
            ),
            (StoreKey::Finished("r-1"), "finished#r-1"),
            (StoreKey::Rate("c0ffee#29000000"), "rate#c0ffee#29000000"),
            (StoreKey::Sync("s3://b/kb"), "sync#s3://b/kb"),
        ] {
            assert_eq!(key.to_string(), text);
            assert_eq!(StoreKey::parse(text), Some(key));
        }
        assert_eq!(StoreKey::parse("run#a#b"), Some(StoreKey::Run("a#b")));
        assert_eq!(StoreKey::parse("lease#x"), None);
        assert_eq!(StoreKey::parse("run"), None);
    }

    #[test]
    fn owner_and_sort_keys_keep_their_stored_shape() {
        assert_eq!(OwnerKey::Runs("c0ffee").to_string(), "runs#c0ffee");
        assert_eq!(OwnerKey::Threads("c0ffee").to_string(), "threads#c0ffee");
        assert_eq!(SortKey::HEAD, "head");
        assert_eq!(SortKey::Turn(7).to_string(), "turn#0000000007");
        assert_eq!(SortKey::Turn(u32::MAX).to_string(), "turn#4294967295");
        assert!(SortKey::Turn(7).to_string().starts_with(SortKey::TURNS));
        let chunk = SortKey::Chunk {
            version: 12,
            index: 3,
        };
        assert_eq!(chunk.to_string(), "chunk#00000000000000000012#0003");
    }

    #[test]
    fn sync_sort_keys_keep_their_stored_shape_and_read_back() {
        assert_eq!(SyncSortKey::Doc("a/b.md").to_string(), "doc#a/b.md");
        assert_eq!(SyncSortKey::Control.to_string(), "control");
        assert_eq!(SyncSortKey::Job(12).to_string(), "job#0000000012");
        assert_eq!(SyncSortKey::doc_of("doc#a/b.md"), Some("a/b.md"));
        assert_eq!(SyncSortKey::doc_of("job#0000000012"), None);
        assert_eq!(SyncSortKey::job_of("job#0000000012"), Some(12));
        assert_eq!(SyncSortKey::job_of("doc#x"), None);
    }
}
