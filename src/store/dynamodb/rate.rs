//! [`CheckpointStore::count_request`] on the checkpoint table: one item per caller and window,
//! `pk` = `rate#<caller digest>#<minute>`, `sk = "head"`, `hits` (N) and `expires_at` (N, the
//! TTL attribute: a minute after the window ends; the item is never read). One `UpdateItem`
//! per request, `ADD hits :one` on condition `hits < :limit`: no read, no scan, and two
//! concurrent requests can never both take the last admission.
//!
//! A request whose response was lost and that the SDK retried may be counted twice: the
//! caller is then admitted one request fewer in that window, never one more.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;

use super::item::{n, s};
use super::table::DynamoStore;
use crate::store::rate::{Window, WINDOW_MS};
use crate::store::{SortKey, StoreError, StoreKey};

impl DynamoStore {
    /// Counts one request (see the module docs).
    pub(super) async fn count_in_window(
        &self,
        counter: &str,
        window: Window,
        limit: u32,
    ) -> Result<bool, StoreError> {
        let key = StoreKey::Rate(&format!("{counter}#{}", window.index)).to_string();
        let expires_at = (window.ends_at_ms() + WINDOW_MS) / 1_000;
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(&key))
            .key("sk", s(SortKey::HEAD))
            .update_expression("ADD hits :one SET expires_at = :expires_at")
            .condition_expression("attribute_not_exists(hits) OR hits < :limit")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":limit", n(u64::from(limit)))
            .expression_attribute_values(":expires_at", n(expires_at))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(UpdateItemError::is_conditional_check_failed_exception) =>
            {
                Ok(false)
            }
            Err(e) => Err(self.sdk_error("UpdateItem", &key, &e)),
        }
    }
}
