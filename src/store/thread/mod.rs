//! Conversation threads in the checkpoint store: the [`ThreadStore`] trait.
//!
//! A thread is a small **head** item (versioned, written conditionally on the version read,
//! so two requests can never both start a turn) plus one **turn** item per finished turn,
//! written once and never rewritten. The head keeps only a bounded window of recent turns, so
//! no item grows with the thread: a turn costs one turn write and two head writes (start and
//! end), whatever the thread's length.
//!
//! Bodies are opaque JSON produced by [`crate::rag`]; the store only keys, versions, orders
//! and expires them. Each head is listed under its owner (the caller digest), newest update
//! first: DynamoDB through the `by_owner` index, the local stores by reading their own items.
//!
//! - DynamoDB: `pk = thread#<digest>#<id>`, `sk = head` for the head (with `owner`,
//!   `owner_sort` for the index), `sk = turn#<turn>` for the turns (`dynamodb/thread.rs`).
//! - Memory and file stores: `thread#<digest>#<id>` and `turn#<digest>#<id>#<turn>` items of
//!   the store itself, with the expiry inside the item (`thread/local.rs`).

mod local;

pub(crate) use local::LocalItems;

use super::StoreError;
use async_trait::async_trait;

/// Which thread: its owner (the caller digest) and the caller's thread id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadKey<'a> {
    /// Hex digest of the caller (`Caller::digest`).
    pub owner: &'a str,
    /// The id the caller chose.
    pub thread_id: &'a str,
}

impl ThreadKey<'_> {
    /// The `<digest>#<id>` part of the thread's store keys.
    pub(crate) fn id(&self) -> String {
        format!("{}#{}", self.owner, self.thread_id)
    }
}

/// A thread head as read: its version and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredHead {
    /// Starts at 1 and grows by one per head write.
    pub version: u64,
    /// The body (JSON).
    pub body: Vec<u8>,
}

/// One head of an owner's listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedHead {
    /// Its place in the listing ([`sort_key`]); the cursor of the next page.
    pub sort: String,
    /// The body (JSON).
    pub body: Vec<u8>,
}

/// How an owner's heads are ordered: zero-padded last update (epoch ms), then the id.
pub(crate) fn sort_key(updated_ms: u64, thread_id: &str) -> String {
    format!("{updated_ms:015}#{thread_id}")
}

/// What a head write carries besides its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadWrite<'a> {
    /// The version read (0: the thread must not exist, or must have expired).
    pub expected: u64,
    /// The body (JSON).
    pub body: &'a [u8],
    /// Last update (epoch ms): orders the owner's listing.
    pub updated_ms: u64,
    /// When the thread expires (epoch ms).
    pub expires_at_ms: u64,
}

/// Threads kept next to the checkpoints (see the module docs).
#[async_trait]
pub trait ThreadStore: Send + Sync {
    /// The head of `key`, or `None` when absent or expired.
    async fn head(&self, key: ThreadKey<'_>) -> Result<Option<StoredHead>, StoreError>;

    /// Writes the head as version `write.expected + 1`, only if the stored version is
    /// `write.expected` ([`StoreError::Conflict`] otherwise). Returns the new version.
    async fn put_head(&self, key: ThreadKey<'_>, write: HeadWrite<'_>) -> Result<u64, StoreError>;

    /// Stores turn number `turn` (written once per turn; a repeat overwrites it).
    async fn put_turn(
        &self,
        key: ThreadKey<'_>,
        turn: u32,
        body: &[u8],
        expires_at_ms: u64,
    ) -> Result<(), StoreError>;

    /// Up to `limit` live turns numbered after `after`, in order.
    async fn turns(
        &self,
        key: ThreadKey<'_>,
        after: u32,
        last: u32,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>, StoreError>;

    /// Up to `limit` live heads of `owner`, most recently updated first, starting after the
    /// head whose sort key is `after` (a previous page's last).
    async fn list(
        &self,
        owner: &str,
        limit: usize,
        after: Option<&str>,
    ) -> Result<Vec<ListedHead>, StoreError>;

    /// Deletes the head (only at version `expected`, else [`StoreError::Conflict`] and
    /// nothing is deleted), then the checkpoints of `runs`, then turns `1..=turns`.
    async fn delete(
        &self,
        key: ThreadKey<'_>,
        expected: u64,
        turns: u32,
        runs: &[String],
    ) -> Result<(), StoreError>;
}
