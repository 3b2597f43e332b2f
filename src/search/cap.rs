//! At most N passages per source document in a ranking.
//!
//! Real folders hold near-duplicates (a crate's README copied into its `-derive` and `-impl`
//! companions, two versions of one package) and long documents whose every passage shares
//! the query's words. Without a cap, one document's passages, or a family of copies of it,
//! fill the top k and push out the document that answers. The cap keeps the ranking order and
//! only skips a passage once its document already has `max` passages in the list.
//!
//! A passage's source is the key the index stores for it (see
//! [`super::bm25::SearchIndex::source`]): its document's path for passages, the item
//! itself for entities, relations and communities, which are never capped together.
use std::collections::HashMap;

/// The first `limit` items of `ranked`, at most `max` of them per source (`max` 0: no cap).
pub(crate) fn per_source<T>(
    ranked: impl IntoIterator<Item = T>,
    source: impl Fn(&T) -> u64,
    max: usize,
    limit: usize,
) -> Vec<T> {
    let mut taken: HashMap<u64, usize> = HashMap::new();
    let mut out = Vec::new();
    for item in ranked {
        if out.len() == limit {
            break;
        }
        let n = taken.entry(source(&item)).or_insert(0);
        if max == 0 || *n < max {
            *n += 1;
            out.push(item);
        }
    }
    out
}

/// A stable 64-bit key of a source path (FNV-1a): the same in every build and bundle.
pub(crate) fn source_key(path: &str) -> u64 {
    path.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_source_keeps_at_most_max_in_ranking_order() {
        // (id, source)
        let ranked = [(1, 7), (2, 7), (3, 7), (4, 8), (5, 7), (6, 9)];
        let ids = |max, limit| -> Vec<u32> {
            per_source(ranked, |h| h.1, max, limit)
                .into_iter()
                .map(|h| h.0)
                .collect()
        };
        assert_eq!(ids(2, 10), [1, 2, 4, 6]);
        assert_eq!(ids(1, 10), [1, 4, 6]);
        assert_eq!(ids(1, 2), [1, 4]);
        assert_eq!(ids(0, 4), [1, 2, 3, 4]);
        assert_eq!(source_key("a.md"), source_key("a.md"));
        assert_ne!(source_key("a.md"), source_key("b.md"));
    }
}
