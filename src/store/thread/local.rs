//! [`ThreadStore`] for the local stores (memory, file), on their own conditional puts.
//!
//! A head is the item `thread#<digest>#<id>`, a turn the item `turn#<digest>#<id>#<turn>`.
//! Both carry their expiry inside (`THREAD_TTL_SECONDS`, not the store's run TTL), and a head
//! carries its owner and sort key, so an owner's listing reads the owner's heads only (one
//! pass over the store's own items: fine for a local store, which has no index; DynamoDB
//! queries its `by_owner` index instead).

use super::{HeadWrite, ListedHead, StoredHead, ThreadKey, ThreadStore};
use crate::store::{CheckpointStore, StoreError, StoreKey};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// What a local store adds to its checkpoints for threads.
#[async_trait]
pub(crate) trait LocalItems: CheckpointStore {
    /// Bodies of the live items whose key starts with `prefix` (it may return more: the
    /// caller checks what it reads).
    async fn bodies_with_prefix(&self, prefix: &str) -> Result<Vec<Vec<u8>>, StoreError>;

    /// Removes the item under `key`, if any; with `expected`, only if it is at that version
    /// ([`StoreError::Conflict`] otherwise).
    async fn remove(&self, key: &str, expected: Option<u64>) -> Result<(), StoreError>;

    /// "Now", in epoch ms, by the store's clock.
    fn now_ms(&self) -> u64;
}

/// A stored head.
#[derive(Serialize, Deserialize)]
struct HeadEnvelope {
    owner: String,
    thread_id: String,
    sort: String,
    expires_at_ms: u64,
    body: String,
}

/// A stored turn.
#[derive(Serialize, Deserialize)]
struct TurnEnvelope {
    expires_at_ms: u64,
    body: String,
}

/// Reads and writes of one turn item before a writer gives up (each lost race means another
/// writer stored the same turn meanwhile).
const TURN_WRITE_ATTEMPTS: usize = 8;

fn head_key(key: ThreadKey<'_>) -> String {
    StoreKey::Thread(&key.id()).to_string()
}

fn turn_key(key: ThreadKey<'_>, turn: u32) -> String {
    StoreKey::ThreadTurn(&format!("{}#{turn:010}", key.id())).to_string()
}

fn corrupt(key: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Permanent(format!("corrupt thread item {key}: {e}"))
}

fn text(body: &[u8], key: &str) -> Result<String, StoreError> {
    String::from_utf8(body.to_vec()).map_err(|e| corrupt(key, e))
}

/// The envelope of `key` and its store version, expired or not.
async fn read_head<S: LocalItems + ?Sized>(
    store: &S,
    key: &str,
) -> Result<Option<(u64, HeadEnvelope)>, StoreError> {
    let Some(item) = store.get(key).await? else {
        return Ok(None);
    };
    let envelope = serde_json::from_slice(&item.body).map_err(|e| corrupt(key, e))?;
    Ok(Some((item.version, envelope)))
}

#[async_trait]
impl<S: LocalItems> ThreadStore for S {
    async fn head(&self, key: ThreadKey<'_>) -> Result<Option<StoredHead>, StoreError> {
        let k = head_key(key);
        Ok(match read_head(self, &k).await? {
            Some((version, env)) if env.expires_at_ms > self.now_ms() => Some(StoredHead {
                version,
                body: env.body.into_bytes(),
            }),
            _ => None,
        })
    }

    async fn put_head(&self, key: ThreadKey<'_>, write: HeadWrite<'_>) -> Result<u64, StoreError> {
        let k = head_key(key);
        // An expired head is absent for writers too: a new thread replaces it.
        let mut expected = write.expected;
        if expected == 0 {
            if let Some((version, env)) = read_head(self, &k).await? {
                if env.expires_at_ms <= self.now_ms() {
                    expected = version;
                }
            }
        }
        let envelope = HeadEnvelope {
            owner: key.owner.to_owned(),
            thread_id: key.thread_id.to_owned(),
            sort: super::sort_key(write.updated_ms, key.thread_id),
            expires_at_ms: write.expires_at_ms,
            body: text(write.body, &k)?,
        };
        let body = serde_json::to_vec(&envelope).map_err(|e| corrupt(&k, e))?;
        self.put(&k, expected, &body, None).await
    }

    async fn put_turn(
        &self,
        key: ThreadKey<'_>,
        turn: u32,
        body: &[u8],
        expires_at_ms: u64,
    ) -> Result<(), StoreError> {
        let k = turn_key(key, turn);
        let envelope = TurnEnvelope {
            expires_at_ms,
            body: text(body, &k)?,
        };
        let body = serde_json::to_vec(&envelope).map_err(|e| corrupt(&k, e))?;
        // Written once per turn; a repeat (a retried finish, or the next turn settling this
        // one while its worker records it) replaces it, like DynamoDB's unconditional put.
        // Both writers hold the same record, so losing the race only means reading again.
        for _ in 0..TURN_WRITE_ATTEMPTS {
            let version = self.get(&k).await?.map_or(0, |v| v.version);
            match self.put(&k, version, &body, None).await {
                Err(StoreError::Conflict { .. }) => continue,
                other => return other.map(|_| ()),
            }
        }
        Err(StoreError::Transient(format!(
            "{TURN_WRITE_ATTEMPTS} concurrent writers kept replacing {k}"
        )))
    }

    async fn turns(
        &self,
        key: ThreadKey<'_>,
        after: u32,
        last: u32,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let now_ms = self.now_ms();
        let mut out = Vec::new();
        let mut turn = after;
        while out.len() < limit && turn < last {
            turn += 1;
            let k = turn_key(key, turn);
            let Some(item) = self.get(&k).await? else {
                continue;
            };
            let env: TurnEnvelope =
                serde_json::from_slice(&item.body).map_err(|e| corrupt(&k, e))?;
            if env.expires_at_ms > now_ms {
                out.push(env.body.into_bytes());
            }
        }
        Ok(out)
    }

    async fn list(
        &self,
        owner: &str,
        limit: usize,
        after: Option<&str>,
    ) -> Result<Vec<ListedHead>, StoreError> {
        let prefix = StoreKey::Thread(&format!("{owner}#")).to_string();
        let now_ms = self.now_ms();
        let mut heads: Vec<ListedHead> = Vec::new();
        for body in self.bodies_with_prefix(&prefix).await? {
            let Ok(env) = serde_json::from_slice::<HeadEnvelope>(&body) else {
                continue; // another kind of item whose file name looked alike
            };
            let before_cursor = after.is_none_or(|a| env.sort.as_str() < a);
            if env.owner == owner && env.expires_at_ms > now_ms && before_cursor {
                heads.push(ListedHead {
                    sort: env.sort,
                    body: env.body.into_bytes(),
                });
            }
        }
        heads.sort_by(|a, b| b.sort.cmp(&a.sort));
        heads.truncate(limit);
        Ok(heads)
    }

    async fn delete(
        &self,
        key: ThreadKey<'_>,
        expected: u64,
        turns: u32,
        runs: &[String],
    ) -> Result<(), StoreError> {
        let k = head_key(key);
        // The head goes first, conditionally: a turn started meanwhile changed its version.
        self.remove(&k, Some(expected)).await?;
        for run_id in runs {
            self.remove(&StoreKey::Run(run_id).to_string(), None)
                .await?;
        }
        for turn in 1..=turns {
            self.remove(&turn_key(key, turn), None).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::FileStore;
    use std::sync::Arc;

    /// The next turn settling an ended one races the worker recording it: both write the same
    /// turn item, and neither may fail for it (seen as a 500 from `serve` under schemathesis).
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_writers_of_one_turn_all_succeed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(FileStore::open(dir.path()).unwrap());
        // As many writers as attempts: each lost race is another writer's success, so every
        // writer succeeds within its attempts.
        let writers: Vec<_> = (0..TURN_WRITE_ATTEMPTS)
            .map(|i| {
                let store = Arc::clone(&store);
                tokio::spawn(async move {
                    let key = ThreadKey {
                        owner: "owner",
                        thread_id: "t1",
                    };
                    let body = format!("{{\"writer\":{i}}}");
                    store.put_turn(key, 1, body.as_bytes(), u64::MAX).await
                })
            })
            .collect();
        for writer in writers {
            writer.await.unwrap().expect("a lost race is not an error");
        }
        let key = ThreadKey {
            owner: "owner",
            thread_id: "t1",
        };
        let stored = store.turns(key, 0, 1, 10).await.unwrap();
        assert_eq!(stored.len(), 1);
        assert!(String::from_utf8_lossy(&stored[0]).starts_with("{\"writer\":"));
    }
}
