//! `DynamoStore` against a real DynamoDB wire API (moto on loopback): the shared conformance
//! suite, then compression, chunking, the size limit, expiry, racing writers, lost responses
//! and error classification.

use crate::support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::config::interceptors::BeforeDeserializationInterceptorContextMut;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::types::AttributeValue;
use bounded_rag::error::{Classify, ErrorClass};
use bounded_rag::store::{CacheStore, CheckpointStore, DynamoStore, StoreError};
use rand::RngCore;
use support::moto::moto;
use support::store_conformance;

const TTL: Duration = Duration::from_secs(3600);

/// A store on a fresh table, with its client built the way the binaries build it.
async fn fresh_store() -> (DynamoStore, aws_sdk_dynamodb::Client, String) {
    let moto = moto().await;
    let table = moto.create_table().await;
    let config = DynamoStore::client_config(&moto.sdk_config().await, Duration::from_secs(20));
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    let store = DynamoStore::new(client.clone(), table.clone(), TTL);
    (store, client, table)
}

/// The raw item under (`pk`, `sk`), as DynamoDB holds it.
async fn raw_item(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    pk: &str,
    sk: &str,
) -> std::collections::HashMap<String, AttributeValue> {
    client
        .get_item()
        .table_name(table)
        .key("pk", AttributeValue::S(pk.into()))
        .key("sk", AttributeValue::S(sk.into()))
        .consistent_read(true)
        .send()
        .await
        .expect("raw GetItem")
        .item
        .expect("item exists")
}

fn random_bytes(len: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    rand::rng().fill_bytes(&mut bytes);
    bytes
}

/// Writes `item` as is, behind the store's back (an expired item DynamoDB has not deleted yet).
async fn put_raw<const N: usize>(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    item: [(&str, AttributeValue); N],
) {
    let mut put = client.put_item().table_name(table);
    for (name, value) in item {
        put = put.item(name, value);
    }
    put.send().await.expect("raw PutItem");
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn assert_conflict(result: Result<u64, StoreError>) {
    assert!(
        matches!(result, Err(StoreError::Conflict { .. })),
        "expected a conflict, got {result:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conforms_to_the_store_contract() {
    let (store, _, _) = fresh_store().await;
    assert_eq!(store.name(), "dynamodb");
    store_conformance::check_all(&store).await;
    store_conformance::check_parallel_tasks(Arc::new(store)).await;
}

#[tokio::test]
async fn conforms_to_the_cache_contract() {
    let (store, _, _) = fresh_store().await;
    store_conformance::check_cache(&store, "dynamodb").await;
}

#[tokio::test]
async fn cache_items_carry_their_own_ttl_and_read_as_absent_once_expired() {
    let (store, client, table) = fresh_store().await;
    let ttl = Duration::from_secs(120);
    store
        .put_cached("cache#fresh", b"reply", ttl)
        .await
        .unwrap();
    let item = raw_item(&client, &table, "cache#fresh", "head").await;
    let expires_at: u64 = item["expires_at"].as_n().unwrap().parse().unwrap();
    let now = now_secs();
    assert!(
        (now + ttl.as_secs() - 5..=now + ttl.as_secs()).contains(&expires_at),
        "the cache TTL ({ttl:?}), not the store's ({TTL:?}): expires_at {expires_at}, now {now}"
    );
    assert_eq!(item["enc"].as_s().unwrap(), "raw");
    assert!(!item.contains_key("version"), "cache items are unversioned");

    // DynamoDB deletes expired items lazily: one still in the table must read as absent.
    let expired = [
        ("pk", AttributeValue::S("cache#old".into())),
        ("sk", AttributeValue::S("head".into())),
        ("enc", AttributeValue::S("raw".into())),
        ("body", AttributeValue::B(b"stale".to_vec().into())),
        (
            "expires_at",
            AttributeValue::N((now_secs() - 60).to_string()),
        ),
    ];
    put_raw(&client, &table, expired).await;
    assert_eq!(store.get_cached("cache#old").await.unwrap(), None);
    store.put_cached("cache#old", b"new", ttl).await.unwrap();
    assert_eq!(
        store.get_cached("cache#old").await.unwrap().as_deref(),
        Some(&b"new"[..])
    );
}

#[tokio::test]
async fn a_cache_body_over_the_item_limit_is_too_large() {
    let (store, _, _) = fresh_store().await;
    let err = store
        .put_cached("cache#huge", &random_bytes(400 * 1024), TTL)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::TooLarge { .. }), "{err}");
    assert_eq!(store.get_cached("cache#huge").await.unwrap(), None);
}

#[tokio::test]
async fn large_compressible_bodies_are_stored_gzipped() {
    let (store, client, table) = fresh_store().await;
    let body =
        br#"{"step":"grade_documents","docs":["some repeated passage text"]},"#.repeat(2_000);
    store.put("run#big", 0, &body, None).await.unwrap();

    let raw = raw_item(&client, &table, "run#big", "head").await;
    assert_eq!(raw["enc"], AttributeValue::S("gzip".into()));
    let stored = raw["body"].as_b().unwrap().as_ref().len();
    assert!(stored * 10 < body.len(), "{stored} of {} bytes", body.len());
    assert_eq!(store.get("run#big").await.unwrap().unwrap().body, body);

    store
        .put("run#small", 0, b"{\"tiny\":true}", None)
        .await
        .unwrap();
    let raw = raw_item(&client, &table, "run#small", "head").await;
    assert_eq!(raw["enc"], AttributeValue::S("raw".into()));
}

#[tokio::test]
async fn incompressible_bodies_over_the_item_limit_split_into_chunks() {
    let (store, client, table) = fresh_store().await;
    let first = random_bytes(1_500_000);
    store.put("run#huge", 0, &first, None).await.unwrap();

    let head = raw_item(&client, &table, "run#huge", "head").await;
    assert_eq!(
        head["enc"],
        AttributeValue::S("raw".into()),
        "gzip did not help"
    );
    assert_eq!(head["chunks"], AttributeValue::N("5".into()));
    assert!(!head.contains_key("body"));
    assert_eq!(store.get("run#huge").await.unwrap().unwrap().body, first);

    // A second chunked version never mixes with the first; a small one goes back inline.
    let second = random_bytes(1_200_000);
    assert_eq!(store.put("run#huge", 1, &second, None).await.unwrap(), 2);
    let item = store.get("run#huge").await.unwrap().unwrap();
    assert_eq!((item.version, item.body == second), (2, true));
    assert_eq!(store.put("run#huge", 2, b"small", None).await.unwrap(), 3);
    assert_eq!(store.get("run#huge").await.unwrap().unwrap().body, b"small");
}

#[tokio::test]
async fn a_body_over_the_transaction_limit_is_too_large() {
    let (store, _, _) = fresh_store().await;
    let err = store
        .put("run#absurd", 0, &random_bytes(5_000_000), None)
        .await
        .unwrap_err();
    match &err {
        StoreError::TooLarge { key, bytes, limit } => {
            assert_eq!(key, "run#absurd");
            assert!(bytes > limit && *limit >= 3_000_000, "{err}");
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert_eq!(err.class(), ErrorClass::Permanent);
    assert_eq!(
        store.get("run#absurd").await.unwrap(),
        None,
        "nothing written"
    );
}

#[tokio::test]
async fn an_expired_item_is_absent_for_readers_and_writers() {
    let (store, client, table) = fresh_store().await;
    let expired = [
        ("pk", AttributeValue::S("run#old".into())),
        ("sk", AttributeValue::S("head".into())),
        ("version", AttributeValue::N("7".into())),
        ("enc", AttributeValue::S("raw".into())),
        ("body", AttributeValue::B(b"stale".to_vec().into())),
        (
            "expires_at",
            AttributeValue::N((now_secs() - 60).to_string()),
        ),
    ];
    put_raw(&client, &table, expired).await;

    assert_eq!(store.get("run#old").await.unwrap(), None);
    assert_conflict(store.put("run#old", 7, b"resurrect", None).await);
    assert_eq!(store.put("run#old", 0, b"fresh", None).await.unwrap(), 1);
    let item = store.get("run#old").await.unwrap().unwrap();
    assert_eq!((item.version, item.body.as_slice()), (1, &b"fresh"[..]));
    let expires_at = raw_item(&client, &table, "run#old", "head").await["expires_at"]
        .as_n()
        .unwrap()
        .parse::<u64>()
        .unwrap();
    assert!(
        expires_at >= now_secs() + TTL.as_secs() - 5,
        "TTL refreshed on write"
    );
}

#[tokio::test]
async fn of_two_racing_writers_exactly_one_wins() {
    let (store, _, _) = fresh_store().await;
    for round in 0..10u64 {
        let key = format!("run#race-{round}");
        store.put(&key, 0, b"start", None).await.unwrap();
        // Same body on purpose: identical writes must still not both succeed.
        let (a, b) = tokio::join!(
            store.put(&key, 1, b"next", None),
            store.put(&key, 1, b"next", None)
        );
        let wins = [&a, &b].iter().filter(|r| r.is_ok()).count();
        assert_eq!(wins, 1, "round {round}: {a:?} {b:?}");
        assert!(matches!(
            (&a, &b),
            (Err(StoreError::Conflict { .. }), _) | (_, Err(StoreError::Conflict { .. }))
        ));
        assert_eq!(store.get(&key).await.unwrap().unwrap().version, 2);
    }
}

/// Turns the next response into a 500, as if the write landed but its answer was lost.
#[derive(Debug, Default)]
struct LoseNextResponse(Arc<AtomicBool>);

impl Intercept for LoseNextResponse {
    fn name(&self) -> &'static str {
        "LoseNextResponse"
    }

    fn modify_before_deserialization(
        &self,
        context: &mut BeforeDeserializationInterceptorContextMut<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if self.0.swap(false, Ordering::SeqCst) {
            *context.response_mut().status_mut() = 500.try_into()?;
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_retried_write_recognises_its_own_success() {
    let moto = moto().await;
    let table = moto.create_table().await;
    let lose = Arc::new(AtomicBool::new(false));
    let config = DynamoStore::client_config(&moto.sdk_config().await, Duration::from_secs(20))
        .to_builder()
        .interceptor(LoseNextResponse(lose.clone()))
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    let store = DynamoStore::new(client, table, TTL);

    lose.store(true, Ordering::SeqCst);
    assert_eq!(store.put("run#r", 0, b"first", None).await.unwrap(), 1);
    assert!(!lose.load(Ordering::SeqCst), "the first response was lost");
    lose.store(true, Ordering::SeqCst);
    let big = random_bytes(800_000);
    assert_eq!(store.put("run#r", 1, &big, None).await.unwrap(), 2);
    assert_eq!(store.get("run#r").await.unwrap().unwrap().body, big);
}

#[tokio::test]
async fn a_missing_table_is_a_permanent_error_naming_the_operation() {
    let moto = moto().await;
    let client = aws_sdk_dynamodb::Client::new(&moto.sdk_config().await);
    let store = DynamoStore::new(client, "no-such-table".into(), TTL);
    for err in [
        store.put("run#x", 0, b"x", None).await.unwrap_err(),
        store.get("run#x").await.unwrap_err(),
    ] {
        let text = err.to_string();
        assert!(matches!(err, StoreError::Permanent(_)), "{err:?}");
        assert!(
            text.contains("no-such-table") && text.contains("Item"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn connection_refused_is_transient() {
    let moto = moto().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port(); // closed again when the listener drops: nothing listens there
    let sdk = moto
        .sdk_config()
        .await
        .into_builder()
        .endpoint_url(format!("http://127.0.0.1:{port}"))
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(DynamoStore::client_config(
        &sdk,
        Duration::from_secs(5),
    ));
    let store = DynamoStore::new(client, "any".into(), TTL);
    let err = store.get("run#x").await.unwrap_err();
    assert!(err.is_transient(), "{err:?}");
}
