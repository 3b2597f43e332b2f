//! Document metadata in a knowledge base: one source's map ([`Meta`]) and the table of them
//! by corpus position ([`MetaTable`]), which filters read.
//!
//! Metadata belongs to a source (a document's passages share its front matter; a graph
//! record has its own), so it is stored as spans of corpus positions, each with one map: a
//! bundle keeps them in `metadata.json` (absent when no document has metadata, as in bundles
//! written before metadata existed). Ingest records the spans; search turns them into the
//! allowed set of a filter (`search::allowed`).
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// One source's metadata: key to a string, number or boolean (what a filter is matched against).
pub(crate) type Meta = std::collections::BTreeMap<String, serde_json::Value>;

/// A corpus position: a passage's or graph record's place in index order.
type DocId = u32;

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

    /// The spans, in position order.
    pub(crate) fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// Every key used, sorted (listed in the manifest).
    pub(crate) fn keys(&self) -> Vec<String> {
        let keys: BTreeSet<&String> = self.spans.iter().flat_map(|s| s.meta.keys()).collect();
        keys.into_iter().cloned().collect()
    }

    /// The metadata at corpus position `id`.
    pub(crate) fn get(&self, id: DocId) -> Option<&Meta> {
        // Spans are pushed in position order and never overlap: a binary search.
        let at = self.spans.partition_point(|s| s.end <= id);
        self.spans
            .get(at)
            .filter(|s| (s.start..s.end).contains(&id))
            .map(|s| &s.meta)
    }

    /// Parses a bundle's `metadata.json`.
    pub(crate) fn from_json(bytes: &[u8]) -> Result<Self, String> {
        let mut table: Self =
            serde_json::from_slice(bytes).map_err(|e| format!("malformed metadata table: {e}"))?;
        // `get` searches by position: keep the spans in order whatever the file's order.
        table.spans.sort_by_key(|s| s.start);
        Ok(table)
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
    fn spans_merge() {
        let mut table = MetaTable::default();
        table.push(0, 2, meta(json!({"tenant": "a"})));
        table.push(2, 1, meta(json!({"tenant": "a"})));
        table.push(3, 1, Meta::new());
        table.push(4, 2, meta(json!({"tenant": "b", "year": 2024})));
        assert_eq!(table.spans.len(), 2, "adjacent equal spans merge");
        assert_eq!(table.keys(), ["tenant", "year"]);
        assert_eq!(table.get(4).unwrap()["tenant"], "b");
        assert!(table.get(3).is_none());
        let json = serde_json::to_vec(&table).unwrap();
        assert_eq!(MetaTable::from_json(&json).unwrap(), table);
    }
}
