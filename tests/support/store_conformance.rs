//! Backend-agnostic conformance checks for [`CheckpointStore`] implementations.
//!
//! Every check uses fresh, uuid-suffixed keys, so the checks can run against a shared,
//! long-lived backend (a DynamoDB table) and in parallel. Call [`check_all`] with any store;
//! call [`check_parallel_tasks`] too when the store can be shared as an `Arc` (it races
//! writers on separate tokio tasks, which needs `'static` handles). Stores that also hold
//! cache items pass [`check_cache`] as well.

use bounded_rag::store::{CacheStore, CheckpointStore, Lease, StoreError, Window};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Barrier;

/// Lifetime of the cache items the cache checks expect to read back.
const CACHE_TTL: Duration = Duration::from_secs(3_600);

/// How many writers race from the same version.
pub const RACERS: usize = 16;

/// A key no other check (or earlier test run) has used.
pub fn fresh_key(check: &str) -> String {
    format!("run#conformance-{check}-{}", uuid::Uuid::new_v4())
}

/// Runs every check that needs only a shared reference.
pub async fn check_all(store: &dyn CheckpointStore) {
    check_get_absent(store).await;
    check_create_and_update(store).await;
    check_stale_version_conflicts(store).await;
    check_create_on_existing_conflicts(store).await;
    check_update_of_absent_conflicts(store).await;
    check_lease_stored_and_cleared(store).await;
    check_concurrent_writers(store).await;
    check_large_body(store).await;
    check_empty_body(store).await;
    check_unusual_keys(store).await;
}

/// Reading a key never written gives `None`.
pub async fn check_get_absent(store: &dyn CheckpointStore) {
    let key = fresh_key("absent");
    assert_eq!(get(store, &key).await, None, "{}: absent key", store.name());
}

/// `put(0)` creates version 1, `put(1)` makes version 2, and `get` sees each.
pub async fn check_create_and_update(store: &dyn CheckpointStore) {
    let key = fresh_key("create");
    assert_eq!(put(store, &key, 0, b"first").await, 1, "{}", store.name());
    assert_eq!(read(store, &key).await, (1, b"first".to_vec()));
    assert_eq!(put(store, &key, 1, b"second").await, 2, "{}", store.name());
    assert_eq!(read(store, &key).await, (2, b"second".to_vec()));
}

/// Writing from an old (or future) version fails with `Conflict` and changes nothing.
pub async fn check_stale_version_conflicts(store: &dyn CheckpointStore) {
    let key = fresh_key("stale");
    put(store, &key, 0, b"v1").await;
    put(store, &key, 1, b"v2").await;
    for expected in [1, 3, 1000] {
        let err = store.put(&key, expected, b"lost", None).await;
        assert_conflict(store, err, &key, expected);
        assert_eq!(
            read(store, &key).await,
            (2, b"v2".to_vec()),
            "{}",
            store.name()
        );
    }
}

/// `put(0)` on an existing key is a `Conflict`: creation can never overwrite.
pub async fn check_create_on_existing_conflicts(store: &dyn CheckpointStore) {
    let key = fresh_key("recreate");
    put(store, &key, 0, b"original").await;
    let err = store.put(&key, 0, b"clobber", None).await;
    assert_conflict(store, err, &key, 0);
    assert_eq!(read(store, &key).await, (1, b"original".to_vec()));
}

/// Updating a key that does not exist is a `Conflict` and does not create it.
pub async fn check_update_of_absent_conflicts(store: &dyn CheckpointStore) {
    let key = fresh_key("phantom");
    let err = store.put(&key, 1, b"x", None).await;
    assert_conflict(store, err, &key, 1);
    assert_eq!(get(store, &key).await, None, "{}", store.name());
}

/// A lease is stored with the item, replaced by the next write's lease, cleared by `None`.
pub async fn check_lease_stored_and_cleared(store: &dyn CheckpointStore) {
    let key = fresh_key("lease");
    let first = Lease {
        owner: "invocation-a".into(),
        expires_at_ms: 1_700_000_000_000,
    };
    let second = Lease {
        owner: "invocation-b".into(),
        expires_at_ms: 1_700_000_060_000,
    };
    let name = store.name();
    store.put(&key, 0, b"a", Some(&first)).await.unwrap();
    assert_eq!(
        lease(store, &key).await,
        Some(first),
        "{name}: lease stored"
    );
    store.put(&key, 1, b"b", Some(&second)).await.unwrap();
    assert_eq!(
        lease(store, &key).await,
        Some(second),
        "{name}: lease replaced"
    );
    store.put(&key, 2, b"c", None).await.unwrap();
    assert_eq!(lease(store, &key).await, None, "{name}: lease cleared");
}

/// Many writers from the same version at once (polled concurrently in this task):
/// exactly one wins, every other one gets `Conflict`, and the winner's body is stored.
pub async fn check_concurrent_writers(store: &dyn CheckpointStore) {
    let key = fresh_key("concurrent");
    put(store, &key, 0, b"start").await;
    let bodies: Vec<Vec<u8>> = (0..RACERS)
        .map(|i| format!("writer-{i}").into_bytes())
        .collect();
    let results =
        futures::future::join_all(bodies.iter().map(|body| store.put(&key, 1, body, None))).await;
    let winner = single_winner(store, &key, results);
    assert_eq!(read(store, &key).await, (2, bodies[winner].clone()));
}

/// Like [`check_concurrent_writers`] but every writer runs on its own tokio task, so on a
/// multi-thread runtime they truly run in parallel.
pub async fn check_parallel_tasks(store: Arc<dyn CheckpointStore>) {
    let key = fresh_key("parallel");
    put(store.as_ref(), &key, 0, b"start").await;
    let barrier = Arc::new(Barrier::new(RACERS));
    let tasks: Vec<_> = (0..RACERS)
        .map(|i| {
            let (store, key, barrier) = (Arc::clone(&store), key.clone(), Arc::clone(&barrier));
            tokio::spawn(async move {
                barrier.wait().await;
                store
                    .put(&key, 1, format!("task-{i}").as_bytes(), None)
                    .await
            })
        })
        .collect();
    let mut results = Vec::with_capacity(RACERS);
    for task in tasks {
        results.push(task.await.expect("writer task panicked"));
    }
    let winner = single_winner(store.as_ref(), &key, results);
    let expected_body = format!("task-{winner}").into_bytes();
    assert_eq!(read(store.as_ref(), &key).await, (2, expected_body));
    check_request_counting(store).await;
}

/// Requests of one caller counted on parallel tasks: exactly `limit` of them are admitted in
/// a window, the next window admits again, and another caller has a counter of its own.
pub async fn check_request_counting(store: Arc<dyn CheckpointStore>) {
    const LIMIT: u32 = 5;
    const REQUESTS: usize = 3 * LIMIT as usize;
    let caller = format!("conformance-{}", uuid::Uuid::new_v4().simple());
    let window = Window::at(1_800_000_000_000);
    let barrier = Arc::new(Barrier::new(REQUESTS));
    let tasks: Vec<_> = (0..REQUESTS)
        .map(|_| {
            let (store, caller, barrier) = (store.clone(), caller.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                store.count_request(&caller, window, LIMIT).await
            })
        })
        .collect();
    let mut admitted = 0;
    for task in tasks {
        admitted += u32::from(
            task.await
                .expect("counting task panicked")
                .expect("counted"),
        );
    }
    assert_eq!(admitted, LIMIT, "{}: admitted in one window", store.name());
    let next = Window::at(window.ends_at_ms());
    assert!(store.count_request(&caller, next, LIMIT).await.unwrap());
    let other = format!("{caller}-other");
    assert!(store.count_request(&other, window, LIMIT).await.unwrap());
}

/// A 1 MiB body of every byte value round-trips byte-exact, and can be replaced.
pub async fn check_large_body(store: &dyn CheckpointStore) {
    let key = fresh_key("large");
    let big = pseudo_random_bytes(1 << 20, 7);
    put(store, &key, 0, &big).await;
    assert!(
        read(store, &key).await.1 == big,
        "{}: 1 MiB body changed",
        store.name()
    );
    let bigger = pseudo_random_bytes(1 << 20, 8);
    put(store, &key, 1, &bigger).await;
    assert!(
        read(store, &key).await == (2, bigger),
        "{}: replacement changed",
        store.name()
    );
}

/// An empty body is a valid body.
pub async fn check_empty_body(store: &dyn CheckpointStore) {
    let key = fresh_key("empty");
    put(store, &key, 0, b"").await;
    assert_eq!(read(store, &key).await, (1, Vec::new()), "{}", store.name());
}

/// Keys with separators, dots, slashes, case and non-ASCII are distinct, independent items.
pub async fn check_unusual_keys(store: &dyn CheckpointStore) {
    let suffix = uuid::Uuid::new_v4();
    let keys = [
        format!("idem#../../etc/passwd-{suffix}"),
        format!("idem#..-{suffix}"),
        format!("idem#A/b c?&=%20-{suffix}"),
        format!("idem#a/B c?&=%20-{suffix}"),
        format!("idem#ünïcødé ☃-{suffix}"),
        format!("idem#{}-{suffix}", "k".repeat(400)),
        format!("idem#{}-{suffix}x", "k".repeat(400)),
    ];
    for (i, key) in keys.iter().enumerate() {
        put(store, key, 0, format!("body-{i}").as_bytes()).await;
    }
    for (i, key) in keys.iter().enumerate() {
        let expected = (1, format!("body-{i}").into_bytes());
        assert_eq!(
            read(store, key).await,
            expected,
            "{}: key {key:?}",
            store.name()
        );
    }
}

/// A cache key no other check (or earlier test run) has used.
pub fn fresh_cache_key(check: &str) -> String {
    format!("cache#conformance-{check}-{}", uuid::Uuid::new_v4())
}

/// Runs every cache check; `name` labels failures.
pub async fn check_cache(store: &dyn CacheStore, name: &str) {
    check_cache_absent(store, name).await;
    check_cache_round_trip(store, name).await;
    check_cache_last_writer_wins(store, name).await;
    check_cache_expired_is_absent(store, name).await;
}

/// Reading a cache key never written gives `None`.
pub async fn check_cache_absent(store: &dyn CacheStore, name: &str) {
    let key = fresh_cache_key("absent");
    assert_eq!(cached(store, name, &key).await, None, "{name}: absent key");
}

/// Bodies come back byte-exact: a short reply, an empty one, binary bytes, and a large
/// compressible one (which DynamoDB stores gzipped).
pub async fn check_cache_round_trip(store: &dyn CacheStore, name: &str) {
    let large = r#"{"answer":"durian "#.repeat(2_000).into_bytes();
    let binary = pseudo_random_bytes(4_096, 11);
    let bodies: [&[u8]; 4] = [br#"{"binary_score":"yes"}"#, b"", &binary, &large];
    for (i, body) in bodies.into_iter().enumerate() {
        let key = fresh_cache_key(&format!("round-trip-{i}"));
        put_cached(store, name, &key, body, CACHE_TTL).await;
        assert!(
            cached(store, name, &key).await.as_deref() == Some(body),
            "{name}: body {i} ({} bytes) changed",
            body.len()
        );
    }
}

/// A second write replaces the first, unconditionally.
pub async fn check_cache_last_writer_wins(store: &dyn CacheStore, name: &str) {
    let key = fresh_cache_key("overwrite");
    put_cached(store, name, &key, b"first", CACHE_TTL).await;
    put_cached(store, name, &key, b"second", CACHE_TTL).await;
    assert_eq!(
        cached(store, name, &key).await.as_deref(),
        Some(&b"second"[..]),
        "{name}"
    );
}

/// An item whose expiry has come reads as absent, even before the backend deletes it; a
/// zero TTL stores an item that is already expired, and replacing a live item with one expires
/// it.
pub async fn check_cache_expired_is_absent(store: &dyn CacheStore, name: &str) {
    let key = fresh_cache_key("expired");
    put_cached(store, name, &key, b"stale", Duration::ZERO).await;
    assert_eq!(cached(store, name, &key).await, None, "{name}: zero TTL");
    let key = fresh_cache_key("expired-over-live");
    put_cached(store, name, &key, b"live", CACHE_TTL).await;
    put_cached(store, name, &key, b"stale", Duration::ZERO).await;
    assert_eq!(
        cached(store, name, &key).await,
        None,
        "{name}: expired over live"
    );
}

/// Deterministic incompressible bytes covering every byte value.
pub fn pseudo_random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            // xorshift64*
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

fn single_winner(
    store: &dyn CheckpointStore,
    key: &str,
    results: Vec<Result<u64, StoreError>>,
) -> usize {
    let mut winners = Vec::new();
    for (i, result) in results.into_iter().enumerate() {
        match result {
            Ok(version) => {
                assert_eq!(version, 2, "{}: winner's version", store.name());
                winners.push(i);
            }
            Err(err) => assert_conflict(store, Err(err), key, 1),
        }
    }
    assert_eq!(winners.len(), 1, "{}: winners {winners:?}", store.name());
    winners[0]
}

fn assert_conflict(
    store: &dyn CheckpointStore,
    result: Result<u64, StoreError>,
    key: &str,
    expected: u64,
) {
    match result {
        Err(StoreError::Conflict {
            key: got_key,
            expected: got,
        }) => {
            assert_eq!((got_key.as_str(), got), (key, expected), "{}", store.name());
        }
        other => panic!(
            "{}: expected Conflict on {key:?} from version {expected}, got {other:?}",
            store.name()
        ),
    }
}

async fn get(store: &dyn CheckpointStore, key: &str) -> Option<(u64, Vec<u8>)> {
    let item = store
        .get(key)
        .await
        .unwrap_or_else(|e| panic!("{}: get {key:?}: {e}", store.name()));
    item.map(|item| (item.version, item.body))
}

async fn read(store: &dyn CheckpointStore, key: &str) -> (u64, Vec<u8>) {
    get(store, key)
        .await
        .unwrap_or_else(|| panic!("{}: {key:?} should exist", store.name()))
}

async fn lease(store: &dyn CheckpointStore, key: &str) -> Option<Lease> {
    store.get(key).await.unwrap().expect("item exists").lease
}

async fn put(store: &dyn CheckpointStore, key: &str, expected: u64, body: &[u8]) -> u64 {
    store
        .put(key, expected, body, None)
        .await
        .unwrap_or_else(|e| panic!("{}: put {key:?} from {expected}: {e}", store.name()))
}

async fn cached(store: &dyn CacheStore, name: &str, key: &str) -> Option<Vec<u8>> {
    store
        .get_cached(key)
        .await
        .unwrap_or_else(|e| panic!("{name}: get_cached {key:?}: {e}"))
}

async fn put_cached(store: &dyn CacheStore, name: &str, key: &str, body: &[u8], ttl: Duration) {
    store
        .put_cached(key, body, ttl)
        .await
        .unwrap_or_else(|e| panic!("{name}: put_cached {key:?}: {e}"));
}
