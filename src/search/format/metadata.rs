//! Document metadata in a knowledge base, and the allowed set a filter makes of it.
//!
//! Metadata belongs to a source (a document's passages share its front matter; a graph
//! record has its own), so it is stored as spans of corpus positions, each with one map: a
//! bundle keeps them in `metadata.json` (absent when no document has metadata, as in bundles
//! written before metadata existed). A filter is judged once per span and becomes an
//! [`Allowed`] bitset over corpus positions, which the BM25 collector, the vector scan and the
//! graph expansion all consult before they take their top k.
use super::filter::Filter;
pub(crate) use super::filter::Meta;
use serde::{Deserialize, Serialize};

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::sync::Arc;
use tantivy::DocId;

/// File of the metadata inside a bundle.
pub(crate) const METADATA_FILE: &str = "metadata.json";

/// Consecutive corpus positions `start..end` sharing one metadata map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Span {
    pub start: DocId,
    pub end: DocId,
    pub meta: Meta,
}

/// The metadata of a corpus: spans in position order, positions without metadata left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct MetaTable {
    spans: Vec<Span>,
}

impl MetaTable {
    /// Records `meta` for the next `count` positions from `start` (nothing when empty).
    pub(crate) fn push(&mut self, start: usize, count: usize, meta: Meta) {
        if meta.is_empty() || count == 0 {
            return;
        }
        let (start, end) = (start as DocId, (start + count) as DocId);
        match self.spans.last_mut() {
            Some(last) if last.end == start && last.meta == meta => last.end = end,
            _ => self.spans.push(Span { start, end, meta }),
        }
    }

    /// Whether no document has metadata.
    pub(crate) fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Every key used, sorted (listed in the manifest).
    pub(crate) fn keys(&self) -> Vec<String> {
        let keys: BTreeSet<&String> = self.spans.iter().flat_map(|s| s.meta.keys()).collect();
        keys.into_iter().cloned().collect()
    }

    /// The metadata at corpus position `id`.
    #[cfg(test)]
    pub(crate) fn get(&self, id: DocId) -> Option<&Meta> {
        self.spans
            .iter()
            .find(|s| (s.start..s.end).contains(&id))
            .map(|s| &s.meta)
    }

    /// The positions of `0..len` that `filter` lets through.
    pub(crate) fn allowed(&self, filter: &Filter, len: usize) -> Allowed {
        let mut bits = vec![0u64; len.div_ceil(64)];
        if filter.matches(&Meta::new()) {
            // A filter that passes documents without metadata (an `or` of nothing useful,
            // never the tenant pin) starts from everything.
            bits.iter_mut().for_each(|w| *w = u64::MAX);
        }
        for span in &self.spans {
            let pass = filter.matches(&span.meta);
            for id in span.start..span.end.min(len as DocId) {
                let (word, bit) = (id as usize / 64, 1u64 << (id % 64));
                if pass {
                    bits[word] |= bit;
                } else {
                    bits[word] &= !bit;
                }
            }
        }
        Allowed(Arc::new(bits))
    }

    /// The content hash `hash` of the documents, extended with the metadata: unchanged
    /// without metadata, so bundles without it keep the version they always had.
    pub(crate) fn hashed_with(&self, hash: String) -> String {
        if self.is_empty() {
            return hash;
        }
        let json = serde_json::to_vec(self).expect("metadata serializes");
        let mut digest = Sha256::new();
        digest.update(hash.as_bytes());
        digest.update(&json);
        super::bundle::hex_digest(digest)
    }

    /// Parses a bundle's `metadata.json`.
    pub(crate) fn from_json(bytes: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("malformed {METADATA_FILE}: {e}"))
    }
}

/// The corpus positions a filtered search may return. Cheap to clone (shared bits).
#[derive(Debug, Clone)]
pub(crate) struct Allowed(Arc<Vec<u64>>);

impl Allowed {
    /// Whether position `id` may be returned.
    pub(crate) fn contains(&self, id: DocId) -> bool {
        self.0
            .get(id as usize / 64)
            .is_some_and(|w| w & (1u64 << (id % 64)) != 0)
    }

    /// Whether `id` passes an optional filter (`None`: no filter, everything passes).
    pub(crate) fn permits(allowed: Option<&Allowed>, id: DocId) -> bool {
        allowed.is_none_or(|a| a.contains(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn meta(value: Value) -> Meta {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn spans_merge_and_filters_become_bitsets() {
        let mut table = MetaTable::default();
        table.push(0, 2, meta(json!({"tenant": "a"})));
        table.push(2, 1, meta(json!({"tenant": "a"})));
        table.push(3, 1, Meta::new());
        table.push(4, 2, meta(json!({"tenant": "b", "year": 2024})));
        assert_eq!(table.spans.len(), 2, "adjacent equal spans merge");
        assert_eq!(table.keys(), ["tenant", "year"]);
        assert_eq!(table.get(4).unwrap()["tenant"], "b");
        assert!(table.get(3).is_none());
        let a = table.allowed(&Filter::equals("tenant", "a"), 70);
        let ids: Vec<DocId> = (0..70).filter(|i| a.contains(*i)).collect();
        assert_eq!(ids, [0, 1, 2]);
        let json = serde_json::to_vec(&table).unwrap();
        assert_eq!(MetaTable::from_json(&json).unwrap(), table);
        assert!(Allowed::permits(None, 9));
        assert!(!Allowed::permits(Some(&a), 9));
    }
}
