//! The moto stack the sync function's tests run against, one per test: a source bucket, a
//! destination bundle location, a sync table (and its [`Ledger`]), a work queue and a scripted
//! embeddings server; with the S3 notifications (from `events/`) of a put and a delete, the
//! environment a `cargo lambda watch` of the sync function needs, and the queue pumped into it.

use aws_sdk_s3::primitives::ByteStream;
use bounded_rag::aws::S3Location;
use bounded_rag::ingest::sync::job::Ledger;
use bounded_rag::kb::s3::{self, BundleStore};
use bounded_rag::store::{DynamoStore, JobRecord};
use serde_json::Value;
use std::time::Duration;

use super::embeddings_server::{EmbedReply, ScriptedEmbeddings};
use super::lambda_watch::LambdaWatch;
use super::moto::{moto, unique_name};
use super::sync_pump::pump;

const CREATED: &str = include_str!("../../events/s3-object-created.json");
const REMOVED: &str = include_str!("../../events/s3-object-removed.json");
/// The embeddings model the stack's server and the sync function agree on.
pub const MODEL: &str = "concepts-7";

/// One moto stack for one test: source bucket, destination, table, queue, embeddings.
pub struct SyncStack {
    pub s3: aws_sdk_s3::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub source: String,
    pub dest: S3Location,
    pub table: String,
    pub queue: String,
    pub ledger: Ledger,
    pub server: ScriptedEmbeddings,
    sequencer: std::sync::atomic::AtomicU64,
}

impl SyncStack {
    /// The tests' stack: a 2 s queue visibility timeout, bundles under `durian`.
    pub async fn new(replies: Vec<EmbedReply>) -> Self {
        Self::create(replies, "2", "durian").await
    }

    /// A stack whose queue hides a received message for `visibility` seconds and whose
    /// destination is `s3://KB/{prefix}`.
    pub async fn create(replies: Vec<EmbedReply>, visibility: &str, prefix: &str) -> Self {
        let moto = moto().await;
        let sdk = moto.sdk_config().await;
        let s3 = s3::client(&sdk);
        let source = unique_name("docs").to_lowercase();
        let kb = unique_name("kb").to_lowercase();
        for bucket in [&source, &kb] {
            s3.create_bucket().bucket(bucket).send().await.unwrap();
        }
        let sqs = moto.sqs().await;
        let queue = sqs
            .create_queue()
            .queue_name(unique_name("sync"))
            .attributes(
                aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout,
                visibility,
            )
            .send()
            .await
            .unwrap()
            .queue_url
            .unwrap();
        let table = moto.create_table().await;
        let dest: S3Location = format!("s3://{kb}/{prefix}").parse().unwrap();
        let records = DynamoStore::for_sync(moto.dynamodb().await, table.clone());
        let ledger = Ledger::new(std::sync::Arc::new(records), &dest.to_string());
        Self {
            s3,
            sqs,
            source,
            dest,
            table,
            queue,
            ledger,
            server: ScriptedEmbeddings::start(replies).await,
            sequencer: std::sync::atomic::AtomicU64::new(0x10),
        }
    }

    pub fn env(&self, extra: &[(&'static str, String)]) -> Vec<(&'static str, String)> {
        let mut env = futures::executor::block_on(moto()).function_env();
        env.extend([
            ("SYNC_TABLE", self.table.clone()),
            ("SYNC_QUEUE_URL", self.queue.clone()),
            ("SYNC_SOURCE_URI", format!("s3://{}/docs", self.source)),
            ("SYNC_DEST_URI", self.dest.to_string()),
            ("SYNC_DEBOUNCE_SECONDS", "1".into()),
            ("SYNC_LEASE_SECONDS", "3".into()),
            ("EMBEDDINGS_BASE_URL", self.server.base_url()),
            ("EMBEDDINGS_MODEL", MODEL.into()),
            ("RUST_LOG", "bounded_rag=info,warn".into()),
        ]);
        env.extend(extra.iter().cloned());
        env
    }

    /// Puts `docs/NAME`; returns its ETag.
    pub async fn put(&self, name: &str, body: impl Into<Vec<u8>>) -> String {
        let out = self
            .s3
            .put_object()
            .bucket(&self.source)
            .key(format!("docs/{name}"))
            .body(ByteStream::from(body.into()))
            .send()
            .await
            .unwrap();
        out.e_tag().unwrap().trim_matches('"').to_owned()
    }

    fn next_sequencer(&self) -> String {
        let n = self
            .sequencer
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        format!("0055AED6DCD9{n:06X}")
    }

    /// The S3 notification (as S3 sends it to the queue) of a put of `docs/NAME`.
    pub fn created(&self, name: &str, etag: &str) -> String {
        let mut event: Value = serde_json::from_str(CREATED).unwrap();
        let record = &mut event["Records"][0]["s3"];
        record["bucket"]["name"] = self.source.clone().into();
        record["object"]["key"] = format!("docs/{name}").into();
        record["object"]["eTag"] = etag.into();
        record["object"]["sequencer"] = self.next_sequencer().into();
        event.to_string()
    }

    pub fn removed(&self, name: &str) -> String {
        let mut event: Value = serde_json::from_str(REMOVED).unwrap();
        let record = &mut event["Records"][0]["s3"];
        record["bucket"]["name"] = self.source.clone().into();
        record["object"]["key"] = format!("docs/{name}").into();
        record["object"]["sequencer"] = self.next_sequencer().into();
        event.to_string()
    }

    pub async fn send(&self, body: &str) {
        self.sqs
            .send_message()
            .queue_url(&self.queue)
            .message_body(body)
            .send()
            .await
            .unwrap();
    }

    pub async fn pump(&self, watches: &[&LambdaWatch]) -> usize {
        let pumped = pump(
            &self.sqs,
            &self.queue,
            watches,
            Duration::from_secs(4),
            Duration::from_secs(300),
        )
        .await;
        pumped.deliveries.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn embedded(&self) -> usize {
        self.server.batches().iter().map(Vec::len).sum()
    }

    pub fn store(&self) -> BundleStore {
        BundleStore::new(self.s3.clone(), self.dest.clone())
    }

    pub async fn jobs(&self) -> Vec<JobRecord> {
        self.ledger.jobs().await.unwrap()
    }
}
