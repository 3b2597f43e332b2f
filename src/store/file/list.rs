//! The file store's owner listing (`GET /workflow/runs` on a local `STATE_DIR`): every live
//! item of the folder, keyed by the key its file records (or, for files written before keys
//! were recorded, by its readable file name), shaped into a page by the store's indexer like
//! the memory store's. A folder read per listing: a local store holds one developer's runs.

use super::{io_error, read_live, FileStore, Inner, BASE64};
use crate::store::owner::{page_of, unsupported};
use crate::store::{Indexer, ListPage, ListedStatus, StoreError};
use base64::Engine as _;
use std::fs;
use std::sync::Arc;

impl FileStore {
    /// Lists items by owner through `indexer` (`GET /workflow/runs`).
    pub(crate) fn with_indexer(mut self, indexer: Arc<dyn Indexer>) -> Self {
        self.indexer = Some(indexer);
        self
    }

    pub(super) async fn list(
        &self,
        owner: &str,
        status: Option<ListedStatus>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ListPage, StoreError> {
        let Some(indexer) = self.indexer.clone() else {
            return Err(unsupported("file"));
        };
        let inner = Arc::clone(&self.inner);
        let items = super::blocking(move || inner.keyed_bodies()).await?;
        Ok(page_of(
            items,
            indexer.as_ref(),
            owner,
            status,
            limit,
            cursor,
        ))
    }
}

impl Inner {
    /// Every live item's key and body.
    fn keyed_bodies(&self) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let entries = fs::read_dir(&self.dir).map_err(|e| io_error("list", &self.dir, e))?;
        let now_ms = self.now_ms();
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error("list", &self.dir, e))?;
            let name = entry.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            let Some(envelope) = read_live(&entry.path(), now_ms)? else {
                continue;
            };
            let Some(key) = envelope.key.clone().or_else(|| key_of_stem(stem)) else {
                continue;
            };
            if let Ok(body) = BASE64.decode(envelope.body.as_bytes()) {
                out.push((key, body));
            }
        }
        Ok(out)
    }
}

/// The key a readable file name stands for (`file_stem` reversed); `None` for a hashed one.
fn key_of_stem(stem: &str) -> Option<String> {
    if stem.contains('~') {
        return None;
    }
    let bytes = stem.as_bytes();
    let mut key = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            key.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            key.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(key).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{CheckpointStore, Listing};

    /// Lists `run#` items under the body's first word, sorted by its second, as completed.
    #[derive(Debug)]
    struct Words;

    impl Indexer for Words {
        fn listing(&self, key: &str, body: &[u8]) -> Option<Listing> {
            key.starts_with("run#").then_some(())?;
            let text = std::str::from_utf8(body).ok()?;
            let (owner, sort) = text.split_once(' ')?;
            Some(Listing {
                owner: owner.to_owned(),
                sort: sort.to_owned(),
                status: ListedStatus::Completed,
            })
        }
    }

    #[tokio::test]
    async fn a_folder_lists_an_owners_runs_newest_first_a_page_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path()).unwrap();
        for (key, body) in [
            ("run#a", "me 1"),
            ("run#b", "me 3"),
            ("run#c", "you 2"),
            ("run#d", "me 2"),
            ("idem#e", "me 9"),
        ] {
            store.put(key, 0, body.as_bytes(), None).await.unwrap();
        }
        assert!(store.list_owned("me", None, 2, None).await.is_err());
        let store = store.with_indexer(Arc::new(Words));
        let first = store.list_owned("me", None, 2, None).await.unwrap();
        let keys = |page: &ListPage| page.items.iter().map(|l| l.key.clone()).collect::<Vec<_>>();
        assert_eq!(keys(&first), ["run#b", "run#d"]);
        let cursor = first.cursor.as_deref();
        let second = store.list_owned("me", None, 2, cursor).await.unwrap();
        assert_eq!(keys(&second), ["run#a"]);
        assert_eq!(second.cursor, None);
        let none = store
            .list_owned("me", Some(ListedStatus::Failed), 2, None)
            .await
            .unwrap();
        assert!(none.items.is_empty());
    }

    #[test]
    fn readable_file_names_read_back_as_their_keys() {
        for key in ["run#4f1c-9a_b", "idem#ABC", "turn#c0#t-1#0000000001"] {
            assert_eq!(
                key_of_stem(&super::super::file_stem(key)).as_deref(),
                Some(key)
            );
        }
        assert_eq!(
            key_of_stem(&super::super::file_stem(&"r".repeat(300))),
            None
        );
        assert_eq!(key_of_stem("run%2"), None);
    }
}
