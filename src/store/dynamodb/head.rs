//! A head item read back, the same way for checkpoints and cache entries: one `GetItem` on
//! (`pk` = the key, `sk = "head"`), then its `enc` and stored bytes decoded into the body, an
//! item without them being corrupt. (The writers encode with `encode`, in the parent module.)

use aws_sdk_dynamodb::types::AttributeValue;

use super::item::{decode, s, Item};
use super::table::DynamoStore;
use crate::store::{SortKey, StoreError};

impl DynamoStore {
    /// The head item of `key`, if there is one: a strongly consistent read when `consistent`
    /// (checkpoints), else an eventually consistent one (cache entries, at half the cost).
    pub(super) async fn head(
        &self,
        key: &str,
        consistent: bool,
    ) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(key))
            .key("sk", s(SortKey::HEAD))
            .set_consistent_read(consistent.then_some(true))
            .send()
            .await
            .map_err(|e| self.sdk_error("GetItem", key, &e))?;
        Ok(out.item)
    }

    /// Takes the `enc` of a head item.
    pub(super) fn take_enc(&self, key: &str, item: &mut Item) -> Result<String, StoreError> {
        match item.remove("enc") {
            Some(AttributeValue::S(enc)) => Ok(enc),
            _ => Err(self.corrupt(key, "no enc")),
        }
    }

    /// The body of `key` from its stored bytes and their `enc`.
    pub(super) fn decoded(
        &self,
        key: &str,
        enc: &str,
        stored: Vec<u8>,
    ) -> Result<Vec<u8>, StoreError> {
        decode(enc, stored)
            .ok_or_else(|| self.corrupt(key, &format!("unknown enc {enc:?}")))?
            .map_err(|e| self.corrupt(key, &format!("bad gzip body: {e}")))
    }
}
