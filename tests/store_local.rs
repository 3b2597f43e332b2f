//! Conformance and concurrency tests of the local stores (memory and file).
//!
//! The file store is also raced across real processes: `file_store_is_safe_across_processes`
//! starts this test binary again, filtered to `child_process_writer`, which is a no-op unless
//! started that way.

use crate::support;

use bounded_rag::store::{CheckpointStore, FileStore, Lease, MemoryStore, StoreError};
use proptest::prelude::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use support::store_conformance::{check_all, check_cache, check_parallel_tasks, fresh_key, RACERS};

const CHILD_DIR_VAR: &str = "BOUNDED_RAG_STORE_CHILD_DIR";
const CHILD_KEY: &str = "run#cross-process";
const INCREMENTS_PER_WRITER: u64 = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_store_conforms() {
    let store = Arc::new(MemoryStore::new());
    check_all(store.as_ref()).await;
    check_parallel_tasks(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_store_with_ttl_conforms() {
    let store = Arc::new(MemoryStore::with_ttl(Duration::from_secs(3600)));
    check_all(store.as_ref()).await;
    check_parallel_tasks(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn file_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileStore::open(dir.path().join("state/runs")).unwrap());
    check_all(store.as_ref()).await;
    check_parallel_tasks(store).await;
    assert_only_store_files(dir.path().join("state/runs").as_path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn file_store_with_ttl_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path())
        .unwrap()
        .with_ttl(Duration::from_secs(3600));
    check_all(&store).await;
}

#[tokio::test]
async fn memory_store_conforms_as_a_cache() {
    check_cache(&MemoryStore::with_ttl(Duration::from_secs(60)), "memory").await;
}

#[tokio::test]
async fn file_store_conforms_as_a_cache() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::open(dir.path())
        .unwrap()
        .with_ttl(Duration::from_secs(60));
    check_cache(&store, "file").await;
    assert_only_store_files(dir.path());
}

#[tokio::test]
async fn file_store_items_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let lease = Lease {
        owner: "cli-1".into(),
        expires_at_ms: 99,
    };
    let first = FileStore::open(dir.path()).unwrap();
    first
        .put("run#keep", 0, b"state", Some(&lease))
        .await
        .unwrap();
    drop(first);
    let reopened = FileStore::open(dir.path()).unwrap();
    let item = reopened.get("run#keep").await.unwrap().unwrap();
    assert_eq!(
        (item.version, item.body, item.lease),
        (1, b"state".to_vec(), Some(lease))
    );
}

/// Two handles on one folder hold separate OS file handles, so their locks exclude each
/// other exactly as two processes' would.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_file_stores_on_one_folder_have_one_winner() {
    let dir = tempfile::tempdir().unwrap();
    let stores = two_stores(dir.path());
    let key = fresh_key("two-stores");
    stores[0].put(&key, 0, b"start", None).await.unwrap();
    let tasks: Vec<_> = (0..RACERS)
        .map(|i| {
            let (store, key) = (Arc::clone(&stores[i % 2]), key.clone());
            tokio::spawn(async move { store.put(&key, 1, b"mine", None).await })
        })
        .collect();
    let mut wins = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(version) => {
                assert_eq!(version, 2);
                wins += 1;
            }
            Err(StoreError::Conflict { expected: 1, .. }) => {}
            Err(other) => panic!("unexpected error: {other}"),
        }
    }
    assert_eq!(wins, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_file_stores_on_one_folder_never_lose_an_update() {
    let dir = tempfile::tempdir().unwrap();
    let stores = two_stores(dir.path());
    let key = fresh_key("counter");
    stores[0].put(&key, 0, b"0", None).await.unwrap();
    let writers = 8;
    let tasks: Vec<_> = (0..writers)
        .map(|i| {
            let (store, key) = (Arc::clone(&stores[i % 2]), key.clone());
            tokio::spawn(async move { increment(store.as_ref(), &key, 25).await })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let item = stores[1].get(&key).await.unwrap().unwrap();
    assert_eq!(item.body, (writers as u64 * 25).to_string().into_bytes());
    assert_eq!(item.version, writers as u64 * 25 + 1);
}

/// Three child processes and this one increment one counter through their own `FileStore`s.
#[test]
fn file_store_is_safe_across_processes() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime();
    let store = FileStore::open(dir.path()).unwrap();
    runtime
        .block_on(store.put(CHILD_KEY, 0, b"0", None))
        .unwrap();

    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..3)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "store_local::child_process_writer",
                    "--exact",
                    "--nocapture",
                ])
                .env(CHILD_DIR_VAR, dir.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    runtime.block_on(increment(&store, CHILD_KEY, INCREMENTS_PER_WRITER));
    for child in children {
        let output = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "child failed: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let item = runtime.block_on(store.get(CHILD_KEY)).unwrap().unwrap();
    assert_eq!(
        item.body,
        (4 * INCREMENTS_PER_WRITER).to_string().into_bytes()
    );
    assert_eq!(item.version, 4 * INCREMENTS_PER_WRITER + 1);
}

/// The writer half of `file_store_is_safe_across_processes`; does nothing when run directly.
#[test]
fn child_process_writer() {
    let Some(dir) = std::env::var_os(CHILD_DIR_VAR) else {
        return;
    };
    let store = FileStore::open(dir).unwrap();
    runtime().block_on(increment(&store, CHILD_KEY, INCREMENTS_PER_WRITER));
}

/// How the expected version of the next put is chosen.
#[derive(Debug, Clone)]
enum Expect {
    /// The version the store should be at.
    Current,
    /// Near it (stale or ahead).
    Offset(i64),
    /// Anything small.
    Absolute(u64),
}

fn expectations() -> impl Strategy<Value = Vec<Expect>> {
    let one = prop_oneof![
        3 => Just(Expect::Current),
        2 => (-2i64..=2).prop_map(Expect::Offset),
        1 => (0u64..6).prop_map(Expect::Absolute),
    ];
    proptest::collection::vec(one, 1..40)
}

/// Applies the puts; a put must succeed exactly when it names the current version, and the
/// final version must equal the number of successful puts.
async fn check_put_sequence(
    store: &dyn CheckpointStore,
    ops: &[Expect],
) -> Result<(), TestCaseError> {
    let key = "run#prop";
    let mut successes = 0u64;
    let mut last_body = None;
    for (i, op) in ops.iter().enumerate() {
        let expected = match *op {
            Expect::Current => successes,
            Expect::Offset(delta) => successes.saturating_add_signed(delta),
            Expect::Absolute(version) => version,
        };
        let body = format!("put-{i}").into_bytes();
        match store.put(key, expected, &body, None).await {
            Ok(version) => {
                prop_assert_eq!(expected, successes, "put from a wrong version succeeded");
                successes += 1;
                prop_assert_eq!(version, successes);
                last_body = Some(body);
            }
            Err(StoreError::Conflict { .. }) => prop_assert_ne!(expected, successes),
            Err(other) => return Err(TestCaseError::fail(other.to_string())),
        }
    }
    let item = store
        .get(key)
        .await
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(item.as_ref().map_or(0, |item| item.version), successes);
    prop_assert_eq!(item.map(|item| item.body), last_body);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn memory_store_version_counts_successful_puts(ops in expectations()) {
        runtime().block_on(check_put_sequence(&MemoryStore::new(), &ops))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn file_store_version_counts_successful_puts(ops in expectations()) {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path()).unwrap();
        runtime().block_on(check_put_sequence(&store, &ops))?;
    }
}

/// Read-modify-write of a decimal counter, retrying on conflict, `times` times.
async fn increment(store: &dyn CheckpointStore, key: &str, times: u64) {
    for _ in 0..times {
        loop {
            let item = store.get(key).await.unwrap().expect("counter exists");
            let n: u64 = std::str::from_utf8(&item.body).unwrap().parse().unwrap();
            let next = (n + 1).to_string();
            match store.put(key, item.version, next.as_bytes(), None).await {
                Ok(_) => break,
                Err(StoreError::Conflict { .. }) => tokio::task::yield_now().await,
                Err(other) => panic!("increment failed: {other}"),
            }
        }
    }
}

fn two_stores(dir: &Path) -> [Arc<FileStore>; 2] {
    [
        Arc::new(FileStore::open(dir).unwrap()),
        Arc::new(FileStore::open(dir).unwrap()),
    ]
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// No temp files are left behind and every name is a safe, encoded stem.
fn assert_only_store_files(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let (stem, ext) = name.rsplit_once('.').unwrap();
        assert!(matches!(ext, "json" | "lock"), "unexpected file {name}");
        assert!(
            stem.bytes().all(|b| b.is_ascii_lowercase()
                || b.is_ascii_digit()
                || b"-_%~ABCDEF".contains(&b)),
            "unsafe file name {name}"
        );
    }
}
