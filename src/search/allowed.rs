//! The allowed set a filter makes of a corpus: a filter is judged once per metadata span
//! (`format::metadata`) and becomes an [`Allowed`] bitset over corpus positions, which the BM25
//! collector, the vector scan and the graph expansion all consult before they take their top k.
use super::filter::{Filter, Meta};
use crate::knowledge::MetaTable;
use std::sync::Arc;
use tantivy::DocId;

/// The corpus positions a filtered search may return. Cheap to clone (shared bits).
#[derive(Debug, Clone)]
pub(crate) struct Allowed(Arc<Vec<u64>>);

impl Allowed {
    /// The positions of `0..len` that `filter` lets through, judged on `table`.
    pub(crate) fn of(table: &MetaTable, filter: &Filter, len: usize) -> Self {
        let mut bits = vec![0u64; len.div_ceil(64)];
        if filter.matches(&Meta::new()) {
            // A filter that passes documents without metadata (an `or` of nothing useful,
            // never the tenant pin) starts from everything.
            bits.iter_mut().for_each(|w| *w = u64::MAX);
        }
        for span in table.spans() {
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
    fn filters_become_bitsets() {
        let mut table = MetaTable::default();
        table.push(0, 2, meta(json!({"tenant": "a"})));
        table.push(2, 1, meta(json!({"tenant": "a"})));
        table.push(3, 1, Meta::new());
        table.push(4, 2, meta(json!({"tenant": "b", "year": 2024})));
        let a = Allowed::of(&table, &Filter::equals("tenant", "a"), 70);
        let ids: Vec<DocId> = (0..70).filter(|i| a.contains(*i)).collect();
        assert_eq!(ids, [0, 1, 2]);
        assert!(Allowed::permits(None, 9));
        assert!(!Allowed::permits(Some(&a), 9));
    }
}
