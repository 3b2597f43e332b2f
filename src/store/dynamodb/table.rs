//! The DynamoDB store's handle: the SDK client, the table, the TTL, the clock and the
//! indexer; its construction, its SDK client configuration and how its failures are
//! classified. What it does is in the sibling modules (checkpoints in the parent module).

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::Client;

use crate::aws::sdk_error_class;
use crate::clock::{Clock, SystemClock};
use crate::error::ErrorClass;
use crate::store::{Indexer, StoreError};

/// [`CheckpointStore`](crate::store::CheckpointStore) on one DynamoDB table (see the `dynamodb` module docs for the item
/// layout).
///
/// Build the SDK client once per process (with [`DynamoStore::client_config`]) and share it.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    pub(super) client: Client,
    pub(super) table: String,
    /// How long an item lives after its last write.
    pub(super) ttl: Duration,
    /// "Now" for `expires_at` (written and checked).
    pub(super) clock: Arc<dyn Clock>,
    /// What head items are listed under in the `by_owner` index; none listed without.
    pub(super) indexer: Option<Arc<dyn Indexer>>,
}

impl DynamoStore {
    /// The sync function's records ([`SyncRecords`](crate::store::SyncRecords)) on `table`
    /// (`SYNC_TABLE`); they never expire, so the store has no TTL to give them.
    pub fn for_sync(client: Client, table: String) -> Self {
        Self::new(client, table, Duration::ZERO)
    }

    /// A store on `table`; every write sets `expires_at` to now + `ttl`.
    pub fn new(client: Client, table: String, ttl: Duration) -> Self {
        Self {
            client,
            table,
            ttl,
            clock: Arc::new(SystemClock),
            indexer: None,
        }
    }

    /// The same store listing head items in the `by_owner` index through `indexer`.
    pub(crate) fn with_indexer(mut self, indexer: Arc<dyn Indexer>) -> Self {
        self.indexer = Some(indexer);
        self
    }

    /// Epoch seconds, the unit of `expires_at`.
    pub(super) fn now_secs(&self) -> u64 {
        self.clock.now_secs()
    }

    /// SDK client configuration for this store: `sdk_config` with standard-mode retries (the
    /// infrastructure retry layer: nothing above it should retry the same call again) and
    /// `operation_timeout` bounding one call including its retries (the app uses
    /// [`crate::aws::run_call_timeout`]: a write started at the usable deadline still ends
    /// before the Lambda deadline).
    pub fn client_config(
        sdk_config: &aws_config::SdkConfig,
        operation_timeout: Duration,
    ) -> aws_sdk_dynamodb::Config {
        let timeouts = crate::aws::timeouts(sdk_config, operation_timeout);
        aws_sdk_dynamodb::config::Builder::from(sdk_config)
            .retry_config(RetryConfig::standard())
            .timeout_config(timeouts)
            .build()
    }

    /// A failed SDK call, classified once: transient or permanent.
    pub(super) fn sdk_error<E>(
        &self,
        operation: &str,
        key: &str,
        err: &SdkError<E, HttpResponse>,
    ) -> StoreError
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        let message = format!(
            "dynamodb {operation} on table {} for {key}: {}",
            self.table,
            DisplayErrorContext(err)
        );
        match sdk_error_class(err) {
            ErrorClass::Transient => StoreError::Transient(message),
            ErrorClass::Permanent => StoreError::Permanent(message),
        }
    }

    /// A stored item that cannot be read back.
    pub(super) fn corrupt(&self, key: &str, what: &str) -> StoreError {
        StoreError::Permanent(format!(
            "corrupt checkpoint {key} in table {}: {what}",
            self.table
        ))
    }
}
