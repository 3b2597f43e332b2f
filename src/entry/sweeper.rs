//! The sweeper function: its clients built once from the environment, and the handler of its
//! scheduled event, which runs one sweep ([`crate::runs::sweep`]) and reports it (a log line,
//! an EMF metrics line).

use super::app;
use crate::clock::{Clock, SystemClock};
use crate::config::Settings;
use crate::runs::{sweep, SweepReport, WorkQueue};
use crate::store::{LeaseIndex, StoreError};
use std::sync::Arc;

/// The sweeper function's clients: the checkpoint table's lease index and the work queue.
pub struct Sweeper {
    /// `None` when the table or the queue is not configured: there is then nothing to sweep
    /// (a local store has no index, and without a queue nothing can be re-queued).
    clients: Option<(Arc<dyn LeaseIndex>, Arc<dyn WorkQueue>)>,
    clock: Arc<dyn Clock>,
}

impl Sweeper {
    /// Over ready-made parts (tests).
    pub fn new(
        index: Arc<dyn LeaseIndex>,
        queue: Arc<dyn WorkQueue>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            clients: Some((index, queue)),
            clock,
        }
    }

    /// Reads the environment (the same settings as the other functions, validated the same
    /// way) and builds the DynamoDB and SQS clients once. Reads no secret: the sweeper calls
    /// no model. Without `CHECKPOINT_TABLE` or `WORK_QUEUE_URL` every sweep is empty.
    pub async fn from_env() -> Result<Self, crate::config::ConfigError> {
        let settings = Settings::from_env()?;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let (Some(table), Some(_)) = (
            settings.aws.checkpoint_table.clone(),
            settings.aws.work_queue_url.as_ref(),
        ) else {
            tracing::warn!("CHECKPOINT_TABLE or WORK_QUEUE_URL is not set: nothing to sweep");
            return Ok(Self {
                clients: None,
                clock,
            });
        };
        let sdk = crate::tls::aws_sdk_config().await;
        let store = app::dynamo_store(&settings, &sdk, &table);
        let clients = app::work_queue(&settings, &sdk).map(|queue| {
            let index: Arc<dyn LeaseIndex> = Arc::new(store);
            let queue: Arc<dyn WorkQueue> = Arc::new(queue);
            (index, queue)
        });
        Ok(Self { clients, clock })
    }

    /// One scheduled sweep. The event (an EventBridge "Scheduled Event") carries nothing the
    /// sweep needs; "now" is this function's clock.
    pub async fn handle(&self, event: &serde_json::Value) -> Result<SweepReport, StoreError> {
        let Some((index, queue)) = &self.clients else {
            return Ok(SweepReport::default());
        };
        let now_ms = self.clock.now_ms();
        let report = sweep(index.as_ref(), queue.as_ref(), now_ms).await?;
        tracing::info!(
            scheduled = event["time"].as_str().unwrap_or(""),
            lapsed = report.lapsed,
            requeued = report.requeued,
            skipped = report.skipped,
            failed = report.failed,
            unlisted = report.unlisted,
            "sweep done"
        );
        let doc =
            super::metrics::sweep_metrics(report.requeued, report.lapsed, report.failed, now_ms);
        println!("{doc}");
        crate::otlp::flush().await;
        Ok(report)
    }
}
