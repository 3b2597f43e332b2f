//! The owner listing on DynamoDB: the attributes a listed head item carries, and the `Query`
//! of the GSI `by_owner` that pages through one owner's items newest first (see
//! `store::owner`). Never a scan: one query per page, a few more only when a status filter
//! leaves a page short.

use aws_sdk_dynamodb::types::AttributeValue;

use super::item::{s, Item};
use super::table::DynamoStore;
use crate::store::owner::{cursor_after, encode_cursor, LISTED_STATUS};
use crate::store::SortKey;
use crate::store::{
    decode_cursor, ListPage, Listed, ListedStatus, Listing, StoreError, OWNER, OWNER_INDEX,
    OWNER_SORT,
};

/// Queries one page may take when a status filter leaves pages short.
const MAX_QUERIES: usize = 8;

impl DynamoStore {
    /// Adds the listing of `key` (if its body is listed) to its head item.
    pub(super) fn add_listing(&self, key: &str, body: &[u8], head: &mut Item) {
        let Some(Listing {
            owner,
            sort,
            status,
        }) = self.indexer.as_ref().and_then(|i| i.listing(key, body))
        else {
            return;
        };
        head.insert(OWNER.to_owned(), s(&owner));
        head.insert(OWNER_SORT.to_owned(), s(&sort));
        head.insert(LISTED_STATUS.to_owned(), s(status.as_str()));
    }

    /// One page of `owner`'s items (see [`crate::store::CheckpointStore::list_owned`]).
    pub(super) async fn query_owned(
        &self,
        owner: &str,
        status: Option<ListedStatus>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ListPage, StoreError> {
        let mut start = cursor.and_then(decode_cursor).map(|(sort, key)| {
            Item::from([
                ("pk".to_owned(), s(&key)),
                ("sk".to_owned(), s(SortKey::HEAD)),
                (OWNER.to_owned(), s(owner)),
                (OWNER_SORT.to_owned(), s(&sort)),
            ])
        });
        let mut items = Vec::new();
        for _ in 0..MAX_QUERIES {
            let wanted = limit.saturating_sub(items.len()).max(1);
            let mut query = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(OWNER_INDEX)
                .key_condition_expression("#owner = :owner")
                .expression_attribute_names("#owner", OWNER)
                .expression_attribute_values(":owner", s(owner))
                .scan_index_forward(false)
                .limit(i32::try_from(wanted).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.take());
            if let Some(status) = status {
                query = query
                    .filter_expression("#status = :status")
                    .expression_attribute_names("#status", LISTED_STATUS)
                    .expression_attribute_values(":status", s(status.as_str()));
            }
            let page = query
                .send()
                .await
                .map_err(|e| self.sdk_error("Query", OWNER_INDEX, &e))?;
            items.extend(page.items().iter().filter_map(listed));
            start = page.last_evaluated_key;
            if start.is_none() || items.len() >= limit {
                break;
            }
        }
        items.truncate(limit);
        let cursor = match (&start, items.last()) {
            (Some(_), Some(last)) => Some(encode_cursor(last)),
            // A filter left every queried item out: resume after the last one read (the last
            // evaluated key holds the keys only, no status).
            (Some(key), None) => position(key).map(|(sort, key)| cursor_after(sort, key)),
            (None, _) => None,
        };
        Ok(ListPage { items, cursor })
    }
}

/// A listed item of the index; `None` for one without a status this store writes.
fn listed(item: &Item) -> Option<Listed> {
    let (sort, key) = position(item)?;
    Some(Listed {
        key: key.to_owned(),
        sort: sort.to_owned(),
        status: ListedStatus::parse(text(item, LISTED_STATUS)?)?,
    })
}

/// Where an item of the index sits: its sort value and key.
fn position(item: &Item) -> Option<(&str, &str)> {
    Some((text(item, OWNER_SORT)?, text(item, "pk")?))
}

fn text<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Some(v),
        _ => None,
    }
}
