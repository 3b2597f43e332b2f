//! `Idempotency-Key`: one key of one caller maps to one run, forever (until the record's TTL).
//!
//! The first request with a key stores `idem#<sha256(caller digest ":" key)> -> run_id` with
//! a conditional create; every repeat by the same caller reads it back and gets the same run.
//! Keys are scoped per caller: two callers using the same key get two runs, and neither can
//! reach the other's run through it. A key reused with a different body is refused, as
//! Powertools' payload validation does.

use crate::engine::EngineError;
use crate::rag::Caller;
use crate::store::{CheckpointStore, StoreError, StoreKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What a key maps to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    run_id: String,
    request_sha256: String,
}

/// The outcome of claiming a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Claim {
    /// First use: start `run_id`.
    New(String),
    /// Seen before with the same body: answer with this run.
    Existing(String),
    /// Seen before with a different body.
    Mismatch,
}

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The store key of `caller`'s idempotency key `key`. The caller's digest has a fixed length,
/// so no (caller, key) pair can produce another pair's string.
fn item_key(caller: &Caller, key: &str) -> String {
    let digest = hex(format!("{}:{key}", caller.digest()).as_bytes());
    StoreKey::Idempotency(&digest).to_string()
}

/// Claims `caller`'s `key` for a new run `run_id` carrying `body`, or finds the run it already
/// names.
pub(crate) async fn claim(
    store: &dyn CheckpointStore,
    caller: &Caller,
    key: &str,
    body: &[u8],
    run_id: &str,
) -> Result<Claim, EngineError> {
    let item_key = item_key(caller, key);
    let request_sha256 = hex(body);
    let record = Record {
        run_id: run_id.to_owned(),
        request_sha256: request_sha256.clone(),
    };
    let bytes = serde_json::to_vec(&record).map_err(|e| EngineError::Corrupt {
        run_id: run_id.to_owned(),
        message: e.to_string(),
    })?;
    match store.put(&item_key, 0, &bytes, None).await {
        Ok(_) => return Ok(Claim::New(run_id.to_owned())),
        Err(StoreError::Conflict { .. }) => {}
        Err(other) => return Err(EngineError::Store(other)),
    }
    let stored = store
        .get(&item_key)
        .await
        .map_err(EngineError::Store)?
        .ok_or_else(|| {
            EngineError::Store(StoreError::Transient("idempotency record vanished".into()))
        })?;
    let existing: Record =
        serde_json::from_slice(&stored.body).map_err(|e| EngineError::Corrupt {
            run_id: item_key.clone(),
            message: e.to_string(),
        })?;
    if existing.request_sha256 != request_sha256 {
        return Ok(Claim::Mismatch);
    }
    Ok(Claim::Existing(existing.run_id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    #[tokio::test]
    async fn one_key_one_run() {
        let store = MemoryStore::new();
        let me = &Caller::Anonymous;
        assert_eq!(
            claim(&store, me, "k", b"{}", "r1").await.unwrap(),
            Claim::New("r1".into())
        );
        assert_eq!(
            claim(&store, me, "k", b"{}", "r2").await.unwrap(),
            Claim::Existing("r1".into())
        );
        assert_eq!(
            claim(&store, me, "k", b"{\"x\":1}", "r3").await.unwrap(),
            Claim::Mismatch
        );
        assert_eq!(
            claim(&store, me, "other", b"{}", "r4").await.unwrap(),
            Claim::New("r4".into())
        );
    }

    #[tokio::test]
    async fn keys_are_scoped_per_caller() {
        let store = MemoryStore::new();
        let alice = &Caller::Jwt("alice".into());
        let bob = &Caller::Jwt("bob".into());
        assert_eq!(
            claim(&store, alice, "k", b"{}", "r1").await.unwrap(),
            Claim::New("r1".into())
        );
        // Same key, same body, another caller: a run of its own.
        assert_eq!(
            claim(&store, bob, "k", b"{}", "r2").await.unwrap(),
            Claim::New("r2".into())
        );
        assert_eq!(
            claim(&store, alice, "k", b"{}", "r3").await.unwrap(),
            Claim::Existing("r1".into())
        );
        assert_eq!(
            claim(&store, &Caller::Iam("alice".into()), "k", b"{}", "r4")
                .await
                .unwrap(),
            Claim::New("r4".into())
        );
    }
}
