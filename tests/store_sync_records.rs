//! The sync function's records ([`SyncRecords`]) on every store: the shared conformance suite
//! on memory, file and DynamoDB (moto on loopback), and the DynamoDB layout the deployed sync
//! table already holds (`pk = sync#DEST`, `sk = doc#KEY | control | job#N`), read back.

use crate::support;

use aws_sdk_dynamodb::types::AttributeValue;
use bounded_rag::store::{DocPhase, DocRecord, DynamoStore, FileStore, MemoryStore, SyncRecords};
use std::sync::Arc;
use std::time::Duration;
use support::moto::moto;
use support::sync_records_conformance::{check_all, check_parallel};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_store_keeps_sync_records() {
    let store: Arc<dyn SyncRecords> = Arc::new(MemoryStore::new());
    check_all(store.as_ref()).await;
    check_parallel(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn file_store_keeps_sync_records() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn SyncRecords> =
        Arc::new(FileStore::open(dir.path().join("state/sync")).unwrap());
    check_all(store.as_ref()).await;
    check_parallel(store).await;
}

async fn dynamodb() -> (DynamoStore, aws_sdk_dynamodb::Client, String) {
    let moto = moto().await;
    let table = moto.create_table().await;
    let config = DynamoStore::client_config(&moto.sdk_config().await, Duration::from_secs(20));
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    (
        DynamoStore::for_sync(client.clone(), table.clone()),
        client,
        table,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamodb_store_keeps_sync_records() {
    let (store, _, _) = dynamodb().await;
    let store: Arc<dyn SyncRecords> = Arc::new(store);
    check_all(store.as_ref()).await;
    check_parallel(store).await;
}

#[tokio::test]
async fn dynamodb_sync_records_keep_their_stored_layout() {
    let (store, client, table) = dynamodb().await;
    let dest = "s3://kb-bucket/kb";
    let record = DocRecord {
        rel: "pests/borer.md".into(),
        object_version: "v7".into(),
        sequencer: "0A1B".into(),
        phase: DocPhase::Failed,
        hash: "cd".repeat(32),
        reason_json: Some(r#"{"kind":"abandoned","attempts":3}"#.into()),
        attempts: 4,
        lease_until: 0,
        rev: 0,
    };
    assert!(store.put_doc(dest, &record, None).await.unwrap());
    store.count_change(dest, 2, 1).await.unwrap();
    let item = client
        .get_item()
        .table_name(&table)
        .key("pk", AttributeValue::S(format!("sync#{dest}")))
        .key("sk", AttributeValue::S("doc#pests/borer.md".into()))
        .send()
        .await
        .unwrap()
        .item
        .expect("the document's item");
    let text = |name: &str| item[name].as_s().unwrap().clone();
    assert_eq!(text("phase"), "failed");
    assert_eq!(text("reason"), r#"{"kind":"abandoned","attempts":3}"#);
    assert_eq!(item["rev"].as_n().unwrap(), "1");
    assert!(
        !item.contains_key("expires_at"),
        "sync records never expire"
    );
    let control = client
        .get_item()
        .table_name(&table)
        .key("pk", AttributeValue::S(format!("sync#{dest}")))
        .key("sk", AttributeValue::S("control".into()))
        .send()
        .await
        .unwrap()
        .item
        .expect("the control item");
    assert_eq!(control["changes"].as_n().unwrap(), "1");
    assert_eq!(control["embedded"].as_n().unwrap(), "2");
}
