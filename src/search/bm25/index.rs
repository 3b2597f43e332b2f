//! The BM25 search index behind the knowledge base (tantivy).
//!
//! Title and content are indexed with an English analyzer (lower-casing, a short stop-word list
//! including question words, Porter stemming) in separate fields per kind (episode, node, edge,
//! community). Separate fields give each kind its own BM25 length and term statistics: a
//! one-sentence fact is not ranked above a paragraph merely for being shorter than the average
//! passage, and a request's kind toggles simply choose which fields are searched.
//!
//! Queries are built directly from the analyzed words of the question (any of them may match),
//! so user punctuation and words such as `AND`, `NOT` or `title:` are just text, never query
//! syntax. Each word scores its best field plus a share of its others
//! ([`FIELD_TIE_BREAKER`]).
//!
//! Every index has exactly one segment, written in the order the documents were given, so a
//! document's position in the corpus is its tantivy doc id: the vectors of a bundle are stored
//! in that order and need no id map.
use super::directory::{MemoryDirectory, ReadOnlyDirectory};
use super::only_allowed::Only;
use crate::knowledge::{DocKind, Document};
use crate::search::allowed::Allowed;
use crate::search::bm25::schema::{
    analyzer, indexed_fields, kind_from_code, schema, title_boost, Fields, HEADING_BOOST,
    SOURCE_FIELD, TOKENIZER,
};
use crate::search::options::RetrievalOptions;
use crate::search::RetrievalError;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use tantivy::collector::TopDocs;
use tantivy::columnar::Column;
use tantivy::directory::OwnedBytes;
use tantivy::query::{BooleanQuery, BoostQuery, DisjunctionMaxQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Value};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{DocAddress, DocId, Index, ReloadPolicy, Searcher, TantivyDocument, Term};

/// Share of a word's score in its other fields added to its best field's. A word found in a
/// passage's title, heading and text counts more than in one of them, but not three times:
/// otherwise a common word that names documents (`serde`) outweighs the rare word that
/// names the answer (`CBOR`).
const FIELD_TIE_BREAKER: f32 = 0.3;
/// Distinct query words used; a 2000-character question stays cheap.
const MAX_QUERY_TERMS: usize = 64;

/// A BM25 hit: the document's position in the corpus and its score.
pub(crate) type Hit = (DocId, f32);

/// A searchable index: one searcher, built once, shared by every request.
pub(crate) struct SearchIndex {
    searcher: Searcher,
    fields: Fields,
    analyzer: TextAnalyzer,
    /// Source keys by doc id, memory-mapped from the fast field; `None` for an empty index.
    sources: Option<Column<u64>>,
}

impl SearchIndex {
    /// Opens an index persisted by ingest (`kb::bundle::build_index`), read-only (nothing is
    /// written to `dir`, so it may sit on a read-only filesystem).
    pub(crate) fn open(dir: &Path) -> Result<Self, RetrievalError> {
        let context = || format!("opening {}", dir.display());
        let directory =
            ReadOnlyDirectory::open(dir).map_err(|e| RetrievalError::index(context(), e))?;
        let index = Index::open(directory).map_err(|e| RetrievalError::index(context(), e))?;
        Self::open_checked(index, dir)
    }

    /// Opens an index whose files are held in memory (paths relative to the index folder).
    /// `origin` names it in errors.
    pub(crate) fn open_in_memory(
        files: HashMap<PathBuf, OwnedBytes>,
        origin: &Path,
    ) -> Result<Self, RetrievalError> {
        let index = Index::open(MemoryDirectory::new(files))
            .map_err(|e| RetrievalError::index(format!("opening {}", origin.display()), e))?;
        Self::open_checked(index, origin)
    }

    fn open_checked(index: Index, origin: &Path) -> Result<Self, RetrievalError> {
        let (expected, fields) = schema();
        if index.schema() != expected {
            return Err(RetrievalError::Invalid {
                path: origin.to_path_buf(),
                message: "the index was written by an incompatible version; re-run ingest".into(),
            });
        }
        index.tokenizers().register(TOKENIZER, analyzer());
        let opened = Self::open_index(index, fields)?;
        if opened.searcher.segment_readers().len() > 1 {
            return Err(RetrievalError::Invalid {
                path: origin.to_path_buf(),
                message: "the index has more than one segment; re-run ingest".into(),
            });
        }
        Ok(opened)
    }

    /// Opens an index just built with the schema's `fields` (ingest builds, search opens).
    pub(crate) fn open_index(index: Index, fields: Fields) -> Result<Self, RetrievalError> {
        // Manual reload: the index never changes after build, so no watcher thread.
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| RetrievalError::index("opening a reader", e))?;
        let searcher = reader.searcher();
        let sources = match searcher.segment_readers().first() {
            Some(segment) => Some(
                segment
                    .fast_fields()
                    .u64(SOURCE_FIELD)
                    .map_err(|e| RetrievalError::index("opening the source keys", e))?,
            ),
            None => None,
        };
        Ok(Self {
            searcher,
            fields,
            analyzer: analyzer(),
            sources,
        })
    }

    /// The key of the source document of the item at `id` (see [`crate::search::cap`]).
    pub(crate) fn source(&self, id: DocId) -> u64 {
        self.sources
            .as_ref()
            .and_then(|column| column.first(id))
            .unwrap_or(u64::from(id))
    }

    /// Number of indexed documents.
    pub(crate) fn num_docs(&self) -> u64 {
        self.searcher.num_docs()
    }

    /// The best documents of the enabled kinds for `query`, best first, with BM25 scores.
    #[cfg(test)]
    pub(crate) fn search(
        &self,
        query: &str,
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        let hits = self.hits(query, options, options.limit, None)?;
        hits.iter()
            .map(|&(id, score)| self.document(id, score))
            .collect()
    }

    /// The `limit` best hits of the enabled kinds for `query`, best first, among the
    /// `allowed` documents when given.
    pub(crate) fn hits(
        &self,
        query: &str,
        options: &RetrievalOptions,
        limit: usize,
        allowed: Option<&Allowed>,
    ) -> Result<Vec<Hit>, RetrievalError> {
        let mut fields: Vec<(Field, f32)> = Vec::new();
        for (enabled, kind) in [
            (options.episodes, DocKind::Episode),
            (options.nodes, DocKind::Node),
            (options.edges, DocKind::Edge),
            (options.communities, DocKind::Community),
        ] {
            let Some((title, content)) = indexed_fields(&self.fields, kind).filter(|_| enabled)
            else {
                continue;
            };
            fields.push((title, title_boost(kind)));
            if kind == DocKind::Episode {
                fields.push((self.fields.episode_heading, HEADING_BOOST));
            }
            fields.push((content, 1.0));
        }
        // TopDocs panics on 0 and preallocates by limit: keep it within 1..=num_docs.
        let limit = limit.min(self.num_docs() as usize);
        let Some(query) = self.query(query, &fields).filter(|_| limit > 0) else {
            return Ok(Vec::new());
        };
        let top = TopDocs::with_limit(limit);
        let hits = match allowed {
            Some(allowed) => self.searcher.search(
                &query,
                &Only {
                    inner: top,
                    allowed: allowed.clone(),
                },
            ),
            None => self.searcher.search(&query, &top),
        }
        .map_err(|e| RetrievalError::index("searching", e))?;
        Ok(hits
            .into_iter()
            .map(|(score, address)| (address.doc_id, score))
            .collect())
    }

    /// The stored document at corpus position `id`, with `score`.
    pub(crate) fn document(&self, id: DocId, score: f32) -> Result<Document, RetrievalError> {
        let stored: TantivyDocument = self
            .searcher
            .doc(DocAddress::new(0, id))
            .map_err(|e| RetrievalError::index("reading a document", e))?;
        self.stored(&stored, score)
    }

    /// Any analyzed word of `text` in the given fields, each with its boost.
    fn query(&self, text: &str, fields: &[(Field, f32)]) -> Option<BooleanQuery> {
        let mut analyzer = self.analyzer.clone();
        let mut stream = analyzer.token_stream(text);
        let mut words = BTreeSet::new();
        while stream.advance() && words.len() < MAX_QUERY_TERMS {
            words.insert(stream.token().text.clone());
        }
        if words.is_empty() || fields.is_empty() {
            return None;
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for word in &words {
            let fields: Vec<Box<dyn Query>> = fields
                .iter()
                .map(|&(field, boost)| {
                    let term = TermQuery::new(
                        Term::from_field_text(field, word),
                        IndexRecordOption::WithFreqs,
                    );
                    let clause: Box<dyn Query> = if boost == 1.0 {
                        Box::new(term)
                    } else {
                        Box::new(BoostQuery::new(Box::new(term), boost))
                    };
                    clause
                })
                .collect();
            let word = DisjunctionMaxQuery::with_tie_breaker(fields, FIELD_TIE_BREAKER);
            clauses.push((Occur::Should, Box::new(word)));
        }
        Some(BooleanQuery::new(clauses))
    }

    fn stored(&self, stored: &TantivyDocument, score: f32) -> Result<Document, RetrievalError> {
        let text = |field| {
            stored
                .get_first(field)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        let code = stored.get_first(self.fields.kind).and_then(|v| v.as_u64());
        let kind = code.and_then(kind_from_code).ok_or_else(|| {
            RetrievalError::index("reading a document", format!("unknown kind {code:?}"))
        })?;
        Ok(Document {
            id: text(self.fields.id),
            title: text(self.fields.title),
            url: text(self.fields.url),
            content: text(self.fields.content),
            score,
            kind,
            clear_match: false,
            from_graph: false,
            vector_rank: None,
        })
    }
}
