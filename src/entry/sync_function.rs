//! The sync function (`src/bin/sync.rs`): S3 event notifications and its own messages from the
//! sync queue, each record handed to the ingest room's [`SyncJob`] and its typed outcome
//! mapped to the batch answer. Only records worth another delivery are reported in
//! `batchItemFailures`:
//!
//! | outcome | reported? |
//! |---|---|
//! | recorded, duplicate, stale, ignored; published, nothing changed, busy (re-sent); full sync queued | no |
//! | another invocation is processing the same write (lease live) | yes: it comes back later |
//! | transient failure (throttling, a timeout, a lost race) | yes |
//! | permanent failure, or a body that is no sync message | yes, until the redrive policy dead-letters it |
use crate::config::Settings;
use crate::embed::Embedder;
use crate::entry::adapters::{EventBridgeSink, SqsQueue};
use crate::entry::app::{build_embedder, load_secrets};
use crate::events::EventKind;
use crate::ingest::IngestOptions;
use crate::ingest::{DocOutcome, Ledger, SyncJob, SyncMessage, SyncSettings};
use crate::kb::{s3_client, BundleStore};
use crate::store::DynamoStore;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use std::sync::Arc;
use std::time::Duration;

/// Everything the sync function builds once, from the environment.
pub struct SyncFunction {
    dynamodb: aws_sdk_dynamodb::Client,
    s3: aws_sdk_s3::Client,
    table: String,
    source: crate::aws::S3Location,
    dest: crate::aws::S3Location,
    queue: SqsQueue,
    events: Option<EventBridgeSink>,
    embedder: Option<Arc<dyn Embedder>>,
    settings: Settings,
    sync: SyncSettings,
}

fn var(name: &str) -> Result<String, String> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| format!("{name} must be set"))
}

fn seconds(name: &str, default: u64, range: std::ops::RangeInclusive<u64>) -> Result<u64, String> {
    let Ok(value) = std::env::var(name) else {
        return Ok(default);
    };
    value
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|v| range.contains(v))
        .ok_or_else(|| format!("{name} must be a whole number in {range:?}, got {value:?}"))
}

impl SyncFunction {
    /// Reads `SYNC_TABLE`, `SYNC_QUEUE_URL`, `SYNC_SOURCE_URI`, `SYNC_DEST_URI` (else
    /// `KB_URI`), `SYNC_DEBOUNCE_SECONDS` (0..=900, default 30), `SYNC_LEASE_SECONDS`
    /// (1..=43200, default 900), `SYNC_MAX_ATTEMPTS` (1..=20, default 3), `EVENT_BUS_NAME`
    /// and the embeddings settings `ingest` uses; builds the clients once.
    pub async fn from_env() -> Result<Self, String> {
        let parse = |name: &str, value: String| {
            value
                .parse::<crate::aws::S3Location>()
                .map_err(|e| format!("{name}: {e}"))
        };
        let source = parse("SYNC_SOURCE_URI", var("SYNC_SOURCE_URI")?)?;
        let dest = match var("SYNC_DEST_URI") {
            Ok(uri) => parse("SYNC_DEST_URI", uri)?,
            Err(_) => parse(
                "KB_URI",
                var("KB_URI").map_err(|_| "SYNC_DEST_URI or KB_URI must be set".to_owned())?,
            )?,
        };
        let sync = SyncSettings {
            debounce: Duration::from_secs(seconds("SYNC_DEBOUNCE_SECONDS", 30, 0..=900)?),
            lease: Duration::from_secs(seconds("SYNC_LEASE_SECONDS", 900, 1..=43_200)?),
            max_attempts: seconds("SYNC_MAX_ATTEMPTS", 3, 1..=20)? as u32,
        };
        let settings = Settings::from_env().map_err(|e| e.to_string())?;
        let sdk = crate::tls::aws_sdk_config().await;
        let secrets = load_secrets(&settings).await.map_err(|e| e.to_string())?;
        let embedder = build_embedder(&settings, &secrets, Some(&sdk))
            .await
            .map_err(|e| e.to_string())?;
        let events = std::env::var("EVENT_BUS_NAME")
            .ok()
            .filter(|b| !b.is_empty())
            .map(|bus| {
                let client = aws_sdk_eventbridge::Client::new(&sdk);
                EventBridgeSink::new(client, bus, EventKind::SyncFinished)
            });
        Ok(Self {
            dynamodb: aws_sdk_dynamodb::Client::new(&sdk),
            s3: s3_client(&sdk),
            table: var("SYNC_TABLE")?,
            queue: SqsQueue::new(aws_sdk_sqs::Client::new(&sdk), var("SYNC_QUEUE_URL")?),
            source,
            dest,
            events,
            embedder,
            settings,
            sync,
        })
    }

    /// The job, borrowing the clients.
    pub fn job(&self) -> SyncJob<'_> {
        let options = IngestOptions::tuned(&self.settings.embeddings_tuning);
        let dest = BundleStore::new(self.s3.clone(), self.dest.clone());
        let records = DynamoStore::for_sync(self.dynamodb.clone(), self.table.clone());
        let ledger = Ledger::new(Arc::new(records), &self.dest.to_string());
        SyncJob::new(
            ledger,
            self.s3.clone(),
            self.source.clone(),
            dest,
            self.embedder.as_deref(),
            options,
            &self.queue,
            self.events.as_ref().map(|e| e as _),
            self.sync.clone(),
        )
    }
}

/// Handles one batch: records one after another (a batch is one key's burst as often as
/// not, and the conditional writes would only turn concurrency into retries).
pub async fn handle_batch(job: &SyncJob<'_>, event: SqsEvent) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    for record in &event.records {
        let id = record.message_id.clone().unwrap_or_default();
        let body = record.body.as_deref().unwrap_or_default();
        if let Err(reason) = handle_body(job, body).await {
            tracing::warn!(message_id = %id, reason, "sync record will be delivered again");
            response.add_failure(id);
        }
    }
    response
}

/// The reason a record comes back, with its class.
fn reason(e: crate::ingest::JobError) -> String {
    let class = if e.is_transient() {
        "transient"
    } else {
        "permanent"
    };
    format!("{class}: {e}")
}

/// One message: `Err` (with the reason) when it must come back.
async fn handle_body(job: &SyncJob<'_>, body: &str) -> Result<(), String> {
    let message = SyncMessage::parse(body).map_err(|e| e.to_string())?;
    match message {
        SyncMessage::Ignore => Ok(()),
        SyncMessage::Changes(changes) => {
            for change in &changes {
                let outcome = job.handle_change(change).await.map_err(reason)?;
                tracing::info!(key = %change.key, ?outcome, "sync change");
                if outcome == DocOutcome::InFlight {
                    return Err(format!(
                        "{} is being processed by another invocation",
                        change.key
                    ));
                }
            }
            Ok(())
        }
        SyncMessage::Publish => {
            let outcome = job.handle_publish().await.map_err(reason)?;
            tracing::info!(?outcome, "sync publish");
            Ok(())
        }
        SyncMessage::FullSync => {
            let sent = job.handle_full_sync().await.map_err(reason)?;
            tracing::info!(sent, "full sync queued");
            Ok(())
        }
    }
}
