//! The documents nearest the question by meaning: the first [`NEAR_RANKS`] distinct source
//! documents of the vector ranking. Each passage of one of them carries its document's rank
//! ([`crate::knowledge::Document::vector_rank`]), in the bundle and in PostgreSQL alike.

/// How many of the vector ranking's first documents carry their [`Document::vector_rank`](crate::knowledge::Document::vector_rank):
/// the first three passages rather than the first alone raised the man-page set's cited share
/// from 0.800 to 0.875 with all-mpnet-base-v2, and the first three documents (a page's every
/// kept passage, not only its nearest one) to 0.900; no set lowered (BENCHMARKS.md).
pub(crate) const NEAR_RANKS: usize = 3;

/// The first [`NEAR_RANKS`] distinct sources of `sources`, the vector ranking's passages'
/// source documents in its order: a document's rank is its position here, plus one.
pub(crate) fn near_sources(sources: impl IntoIterator<Item = u64>) -> Vec<u64> {
    let mut near = Vec::with_capacity(NEAR_RANKS);
    for source in sources {
        if near.len() == NEAR_RANKS {
            break;
        }
        if !near.contains(&source) {
            near.push(source);
        }
    }
    near
}

/// The rank (from 1) of `source` among `near` ([`near_sources`]), if it is there.
pub(crate) fn rank_of(near: &[u64], source: u64) -> Option<u32> {
    near.iter().position(|s| *s == source).map(|i| i as u32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_ranks_by_its_first_passage_in_the_vector_ranking() {
        // Passages of documents 7, 7, 4, 7, 9, 2: the documents 7, 4, 9 are the first three.
        let near = near_sources([7, 7, 4, 7, 9, 2]);
        assert_eq!(near, [7, 4, 9]);
        assert_eq!(rank_of(&near, 9), Some(3));
        assert_eq!(rank_of(&near, 2), None, "the fourth document");
        assert!(near_sources([]).is_empty());
    }
}
