//! The sync function's work, one SQS message at a time (the entry parses the batch and maps
//! outcomes): a changed object read, embedded and recorded once ([`SyncJob::handle_change`]);
//! the debounced, single-flight publish ([`SyncJob::handle_publish`]); a full sync fanned out
//! over the queue ([`SyncJob::handle_full_sync`]). Records live in the store ([`Ledger`] on
//! [`crate::store::SyncRecords`]),
//! documents' reader output and vectors beside the knowledge base in S3; the queue and the
//! event bus are seams ([`SyncQueue`], [`EventSink`]) the entry fills with SQS and
//! EventBridge (`Sync Finished` events).
//!
//! | module | owns |
//! |---|---|
//! | `message` | [`SyncMessage`]: S3 notifications and the function's own messages, parsed |
//! | `ledger` | one destination's records in the store: documents, the publish lease and counters, jobs |
//! | `document` | one change: claim, read, embed, record, schedule a publish |
//! | `publish` | the publish lease, the state from the records, one version, the job's statistics |
//! | `fanout` | a full sync: the source listed, changed documents queued |
//! | `error` | [`JobError`], transient or permanent |
mod document;
mod error;
mod fanout;
mod ledger;
mod message;
mod publish;

pub(crate) use document::DocOutcome;
pub use error::JobError;
pub use ledger::{reason_of, summary_of, Ledger};
pub(crate) use message::SyncMessage;

use super::objects::SyncObjects;
use super::source::SyncSource;
use crate::aws::S3Location;
use crate::embed::Embedder;
use crate::events::EventSink;
use crate::ingest::options::IngestOptions;
use crate::kb::BundleStore;
use async_trait::async_trait;
use std::time::Duration;

/// Sends the sync function's own messages (the debounced publish, a full sync's documents).
#[async_trait]
pub(crate) trait SyncQueue: Send + Sync {
    /// Sends `body`, visible after `delay`.
    async fn send(&self, body: String, delay: Duration) -> Result<(), JobError>;

    /// Sends `bodies` at once (a full sync's fan-out), visible now.
    async fn send_all(&self, bodies: Vec<String>) -> Result<(), JobError> {
        for body in bodies {
            self.send(body, Duration::ZERO).await?;
        }
        Ok(())
    }
}

/// How the sync function behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyncSettings {
    /// How long after a change the publish runs (changes within it share one publish).
    pub debounce: Duration,
    /// How long a document's processing, or a publish, holds its lease: an invocation that
    /// crashed is taken over after it.
    pub lease: Duration,
    /// Deliveries of one write before it is marked failed ([`super::FailReason::Abandoned`]).
    pub max_attempts: u32,
}

impl Default for SyncSettings {
    fn default() -> Self {
        Self {
            debounce: Duration::from_secs(30),
            lease: Duration::from_secs(900),
            max_attempts: 3,
        }
    }
}

/// Everything one sync function needs, built once.
pub struct SyncJob<'a> {
    pub(crate) ledger: Ledger,
    pub(crate) source: SyncSource,
    pub(crate) source_location: S3Location,
    pub(crate) objects: SyncObjects,
    pub(crate) options: IngestOptions<'a>,
    pub(crate) queue: &'a dyn SyncQueue,
    pub(crate) events: Option<&'a dyn EventSink>,
    pub(crate) settings: SyncSettings,
}

impl<'a> SyncJob<'a> {
    /// A sync of `source` (a bucket and prefix read through `s3`) to the knowledge base at
    /// `dest`, recorded in `ledger`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        ledger: Ledger,
        s3: aws_sdk_s3::Client,
        source: S3Location,
        dest: BundleStore,
        embedder: Option<&'a dyn Embedder>,
        options: IngestOptions<'a>,
        queue: &'a dyn SyncQueue,
        events: Option<&'a dyn EventSink>,
        settings: SyncSettings,
    ) -> Self {
        crate::ingest::sources::enable_parsers();
        Self {
            ledger,
            source: SyncSource::S3 {
                client: s3,
                location: source.clone(),
            },
            source_location: source,
            objects: SyncObjects::new(dest),
            options: IngestOptions {
                embedder,
                ..options
            },
            queue,
            events,
            settings,
        }
    }

    /// The key of `key` relative to the source prefix, when it is a file a sync reads (under
    /// the prefix, not hidden, not a folder marker).
    pub(crate) fn rel_of(&self, key: &str) -> Option<String> {
        let prefix = &self.source_location.prefix;
        let rel = if prefix.is_empty() {
            key
        } else {
            key.strip_prefix(prefix.as_str())?.strip_prefix('/')?
        };
        let hidden = rel.split('/').any(|p| p.starts_with('.'));
        (!rel.is_empty() && !rel.ends_with('/') && !hidden).then(|| rel.to_owned())
    }

    /// Marks a publish as scheduled and sends its message, delayed by the debounce, unless
    /// one is scheduled already.
    pub(crate) async fn schedule_publish(&self) -> Result<(), JobError> {
        if !self.ledger.schedule().await? {
            return Ok(());
        }
        let sent = self
            .queue
            .send(SyncMessage::publish_body(), self.settings.debounce)
            .await;
        if let Err(e) = sent {
            self.ledger.unschedule().await?;
            return Err(e);
        }
        Ok(())
    }
}

/// Now, in epoch milliseconds.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
