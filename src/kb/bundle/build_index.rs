//! Building the BM25 index (tantivy) from a corpus: in memory, for a knowledge base indexed at
//! load, or into a bundle's `index/` folder. Either way one segment, written in corpus order,
//! with the bundle format's schema and analyzer (`search`'s `bm25::schema`); search opens it.
use crate::knowledge::Document;
use crate::search::RetrievalError;
use crate::search::SearchIndex;
use crate::search::{analyzer, schema, to_indexed, TOKENIZER};
use std::path::Path;
use tantivy::store::Compressor;
use tantivy::{Index, IndexSettings, SingleSegmentIndexWriter};

/// Memory budget of the in-memory build; it sizes the initial term table only.
const RAM_WRITER_MEMORY: usize = 1_000_000;
/// Memory budget of the on-disk build. The single segment is built in memory and grows as
/// needed; the budget only sizes its term table (tantivy caps it at 512K entries).
const DISK_WRITER_MEMORY: usize = 100_000_000;

/// Indexes `docs` in memory, on the calling thread.
///
/// Uses tantivy's single-segment writer: no indexing or merge threads and no 15 MB
/// per-thread arena, which keeps a cold start at a few milliseconds and a few megabytes.
/// It needs a fresh, empty directory, which a new RAM index is.
pub(crate) fn build_in_ram(docs: &[Document]) -> Result<SearchIndex, RetrievalError> {
    let (schema, fields) = schema();
    // The doc store is small and uncompressed: no dedicated compressor thread.
    let settings = IndexSettings {
        docstore_compression: Compressor::None,
        docstore_compress_dedicated_thread: false,
        ..IndexSettings::default()
    };
    let index = Index::builder()
        .schema(schema)
        .settings(settings)
        .create_in_ram()
        .map_err(|e| RetrievalError::index("creating an in-memory index", e))?;
    index.tokenizers().register(TOKENIZER, analyzer());
    let err = |e: tantivy::TantivyError| RetrievalError::index("indexing documents", e);
    let mut writer = SingleSegmentIndexWriter::new(index, RAM_WRITER_MEMORY).map_err(err)?;
    for doc in docs {
        writer.add_document(to_indexed(&fields, doc)).map_err(err)?;
    }
    let index = writer.finalize().map_err(err)?;
    SearchIndex::open_index(index, fields)
}

/// Indexes `docs` into the empty folder `dir` as one segment (doc ids in corpus order),
/// persisted for search's `SearchIndex::open`.
/// The stored texts are LZ4-compressed: a bundle is downloaded whole at cold start, and
/// decompressing the few documents a query returns costs microseconds.
pub(crate) fn build_in_dir(dir: &Path, docs: &[Document]) -> Result<SearchIndex, RetrievalError> {
    let (schema, fields) = schema();
    let settings = IndexSettings {
        docstore_compression: Compressor::Lz4,
        docstore_compress_dedicated_thread: false,
        ..IndexSettings::default()
    };
    let index = Index::builder()
        .schema(schema)
        .settings(settings)
        .create_in_dir(dir)
        .map_err(|e| RetrievalError::index(format!("creating {}", dir.display()), e))?;
    index.tokenizers().register(TOKENIZER, analyzer());
    let err = |e: tantivy::TantivyError| RetrievalError::index("indexing documents", e);
    let mut writer = SingleSegmentIndexWriter::new(index, DISK_WRITER_MEMORY).map_err(err)?;
    for doc in docs {
        writer.add_document(to_indexed(&fields, doc)).map_err(err)?;
    }
    let index = writer.finalize().map_err(err)?;
    SearchIndex::open_index(index, fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::DocKind;
    use crate::search::fixtures::{all, doc};
    use crate::search::RetrievalOptions;

    fn sample() -> SearchIndex {
        build_in_ram(&[
            doc(
                "a",
                "Pink disease",
                "A fungus forms pink crusts on branches.",
                DocKind::Episode,
            ),
            doc(
                "b",
                "Psyllid",
                "Psyllids suck sap from young flushes.",
                DocKind::Node,
            ),
            doc(
                "c",
                "pink — on — branch",
                "Pink crusts girdle branches.",
                DocKind::Edge,
            ),
        ])
        .unwrap()
    }

    #[test]
    fn stemmed_words_match_and_round_trip_every_field() {
        let index = sample();
        let hits = index
            .search("Why do psyllids SUCKING flush?", &all(3))
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].id, "b");
        assert_eq!(hits[0].url, "kb://b");
        assert_eq!(hits[0].kind, DocKind::Node);
        assert!(hits[0].score > 0.0);
    }

    #[test]
    fn query_syntax_and_stop_words_are_plain_text() {
        let index = sample();
        for q in [
            "title:pink AND (NOT",
            "\"pink",
            "pink^2 ~ [a TO",
            "pink*?",
            ":::",
        ] {
            index.search(q, &all(3)).unwrap();
        }
        assert!(index.search("what is the", &all(3)).unwrap().is_empty());
        assert!(index.search("", &all(3)).unwrap().is_empty());
        assert!(index.search("pink", &all(0)).unwrap().is_empty());
    }

    #[test]
    fn kinds_filter_and_limit_apply() {
        let index = sample();
        let hits = index.search("pink branches", &all(10)).unwrap();
        assert_eq!(hits.len(), 2);
        assert!(hits[0].score >= hits[1].score);
        let only_edges = RetrievalOptions {
            episodes: false,
            nodes: false,
            ..all(10)
        };
        let hits = index.search("pink branches", &only_edges).unwrap();
        assert_eq!(
            hits.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(),
            ["c"]
        );
        assert_eq!(index.search("pink branches", &all(1)).unwrap().len(), 1);
        let none = RetrievalOptions {
            episodes: false,
            nodes: false,
            edges: false,
            communities: false,
            ..all(10)
        };
        assert!(index.search("pink", &none).unwrap().is_empty());
    }
}
