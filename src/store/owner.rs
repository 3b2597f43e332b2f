//! Listing items by owner, newest first, without a scan: what an item is listed under
//! ([`Listing`], told to the store by an [`Indexer`] the layer above provides, since only it can
//! read a body) and a page of what one owner has ([`ListPage`]).
//!
//! On DynamoDB this is the GSI `by_owner` (`owner` S hash, `owner_sort` S range, projection
//! ALL): every head item written with a listing carries `owner`, `owner_sort` and
//! `listed_status`, so one `Query` with `ScanIndexForward = false` returns an owner's items
//! newest first, and a status filter is a `FilterExpression` on that query. Runs are listed
//! under `runs#<caller digest>` with `owner_sort` = zero-padded creation time in epoch
//! milliseconds, `#`, run id, and with their status ([`ListedStatus`]).

use super::StoreError;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

/// Name of the DynamoDB GSI listing items by owner.
pub const OWNER_INDEX: &str = "by_owner";
/// Its hash key attribute.
pub const OWNER: &str = "owner";
/// Its range key attribute.
pub const OWNER_SORT: &str = "owner_sort";
/// The status an item is listed with (filterable).
pub(crate) const LISTED_STATUS: &str = "listed_status";

/// The status a run is listed with, to filter an owner's list by: a closed set (the run
/// statuses of the workflow above, which convert into it), stored as its wire name in the
/// `listed_status` attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListedStatus {
    /// `running`.
    Running,
    /// `completed`.
    Completed,
    /// `best_effort`.
    BestEffort,
    /// `suspended`.
    Suspended,
    /// `failed`.
    Failed,
    /// `cancelled`.
    Cancelled,
    /// `waiting`.
    Waiting,
}

impl ListedStatus {
    /// Every status, in wire order.
    const ALL: [ListedStatus; 7] = [
        ListedStatus::Running,
        ListedStatus::Completed,
        ListedStatus::BestEffort,
        ListedStatus::Suspended,
        ListedStatus::Failed,
        ListedStatus::Cancelled,
        ListedStatus::Waiting,
    ];

    /// The stored value (`listed_status`), the run status's wire name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ListedStatus::Running => "running",
            ListedStatus::Completed => "completed",
            ListedStatus::BestEffort => "best_effort",
            ListedStatus::Suspended => "suspended",
            ListedStatus::Failed => "failed",
            ListedStatus::Cancelled => "cancelled",
            ListedStatus::Waiting => "waiting",
        }
    }

    /// The status stored as `text`; `None` for a value this store never wrote.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl PartialEq<&str> for ListedStatus {
    fn eq(&self, wire_name: &&str) -> bool {
        self.as_str() == *wire_name
    }
}

/// What an item is listed under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The owner (`runs#<caller digest>`).
    pub owner: String,
    /// Sorts the owner's items: the greatest is the newest.
    pub sort: String,
    /// The status to filter by.
    pub status: ListedStatus,
}

/// Tells a store what an item is listed under, from its key and body (`None`: not listed).
pub trait Indexer: Send + Sync + std::fmt::Debug {
    /// The listing of the item `key` holding `body`.
    fn listing(&self, key: &str, body: &[u8]) -> Option<Listing>;
}

/// One listed item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    /// The item's store key.
    pub key: String,
    /// Its sort value.
    pub sort: String,
    /// Its listed status.
    pub status: ListedStatus,
}

/// A page of an owner's items, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListPage {
    /// The items.
    pub(crate) items: Vec<Listed>,
    /// Where the next page starts, when there may be one ([`encode_cursor`]).
    pub cursor: Option<String>,
}

/// The opaque cursor after `last`: its sort value and key, URL-safe base64.
pub(crate) fn encode_cursor(last: &Listed) -> String {
    cursor_after(&last.sort, &last.key)
}

/// The opaque cursor after the item `key` sorted at `sort`.
pub(crate) fn cursor_after(sort: &str, key: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{sort}\n{key}"))
}

/// The (sort, key) a cursor resumes after; `None` for one this store never wrote.
pub(crate) fn decode_cursor(cursor: &str) -> Option<(String, String)> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (sort, key) = text.split_once('\n')?;
    (!sort.is_empty() && !key.is_empty()).then(|| (sort.to_owned(), key.to_owned()))
}

/// One page of `owner`'s items among `items` (key and body), newest first: the listing of a
/// store that scans its items (memory, file), where DynamoDB queries its `by_owner` index.
pub(crate) fn page_of(
    items: impl IntoIterator<Item = (String, Vec<u8>)>,
    indexer: &dyn Indexer,
    owner: &str,
    status: Option<ListedStatus>,
    limit: usize,
    cursor: Option<&str>,
) -> ListPage {
    let after = cursor.and_then(decode_cursor);
    let mut listed: Vec<Listed> = items
        .into_iter()
        .filter_map(|(key, body)| {
            let listing = indexer.listing(&key, &body)?;
            let wanted = listing.owner == owner && status.is_none_or(|s| s == listing.status);
            wanted.then_some(Listed {
                key,
                sort: listing.sort,
                status: listing.status,
            })
        })
        .filter(|l| {
            after
                .as_ref()
                .is_none_or(|(sort, key)| (&l.sort, &l.key) < (sort, key))
        })
        .collect();
    listed.sort_by(|a, b| (&b.sort, &b.key).cmp(&(&a.sort, &a.key)));
    let more = listed.len() > limit;
    listed.truncate(limit);
    let cursor = more.then(|| listed.last().map(encode_cursor)).flatten();
    ListPage {
        items: listed,
        cursor,
    }
}

/// A store without an owner listing.
pub(crate) fn unsupported(store: &str) -> StoreError {
    StoreError::Permanent(format!(
        "the {store} store cannot list runs by owner (set CHECKPOINT_TABLE)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_read_back_and_foreign_ones_are_refused() {
        let last = Listed {
            key: "run#r-1".into(),
            sort: "000001800000000000#r-1".into(),
            status: ListedStatus::Completed,
        };
        let cursor = encode_cursor(&last);
        assert_eq!(
            decode_cursor(&cursor),
            Some((last.sort.clone(), last.key.clone()))
        );
        assert!(cursor
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert_eq!(decode_cursor("not a cursor"), None);
        assert_eq!(decode_cursor(&URL_SAFE_NO_PAD.encode("no-newline")), None);
    }

    #[test]
    fn statuses_are_stored_by_their_wire_names() {
        let names: Vec<&str> = ListedStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(
            names,
            [
                "running",
                "completed",
                "best_effort",
                "suspended",
                "failed",
                "cancelled",
                "waiting"
            ]
        );
        for status in ListedStatus::ALL {
            assert_eq!(ListedStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(ListedStatus::parse(""), None);
        assert_eq!(ListedStatus::parse("Completed"), None);
    }
}
