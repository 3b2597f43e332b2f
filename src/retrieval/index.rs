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
//! syntax.
use super::{DocKind, Document, RetrievalError, RetrievalOptions};
use std::collections::BTreeSet;
use std::path::Path;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, STORED,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};
use tantivy::{Index, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term};

/// Name under which the analyzer is registered; stored in the index schema.
const TOKENIZER: &str = "bounded_rag_en";
/// How much a title match weighs against a content match, by kind. Passage headings and
/// community names summarise their text, so they count more; node names and edge titles
/// ("source — relation — target") restate what the content already says, so they do not.
fn title_boost(kind: DocKind) -> f32 {
    match kind {
        DocKind::Episode | DocKind::Community => 1.5,
        DocKind::Node | DocKind::Edge | DocKind::Web => 1.0,
    }
}
/// Distinct query words used; a 2000-character question stays cheap.
const MAX_QUERY_TERMS: usize = 64;
/// Indexing memory budget (tantivy's minimum per thread).
const WRITER_MEMORY: usize = 15_000_000;

/// English stop words: Lucene's list plus question words that carry no topic.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with", "what", "which", "who", "whom", "how", "why",
    "when", "where", "do", "does", "did", "can", "could", "should", "would", "i", "my", "me", "we",
    "our", "you", "your", "about", "tell", "please",
];

/// The kinds a knowledge base searches, each with its own indexed fields.
const SEARCHABLE: [DocKind; 4] = [
    DocKind::Episode,
    DocKind::Node,
    DocKind::Edge,
    DocKind::Community,
];

/// The fields of the schema.
#[derive(Clone, Copy)]
struct Fields {
    id: Field,
    title: Field,
    url: Field,
    content: Field,
    kind: Field,
    /// Indexed (title, content) per kind, in [`SEARCHABLE`] order.
    indexed: [(Field, Field); 4],
}

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let id = builder.add_text_field("id", STORED);
    let title = builder.add_text_field("title", STORED);
    let url = builder.add_text_field("url", STORED);
    let content = builder.add_text_field("content", STORED);
    let kind = builder.add_u64_field("kind", STORED);
    let indexed = SEARCHABLE.map(|kind| {
        let name = serde_json::to_value(kind).expect("kinds serialize");
        let name = name.as_str().expect("kinds are strings");
        (
            builder.add_text_field(&format!("{name}_title"), text.clone()),
            builder.add_text_field(&format!("{name}_content"), text.clone()),
        )
    });
    let fields = Fields {
        id,
        title,
        url,
        content,
        kind,
        indexed,
    };
    (builder.build(), fields)
}

/// The indexed (title, content) fields of a kind; `None` for kinds never searched (web).
fn indexed_fields(fields: &Fields, kind: DocKind) -> Option<(Field, Field)> {
    let slot = SEARCHABLE.iter().position(|k| *k == kind)?;
    Some(fields.indexed[slot])
}

fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(StopWordFilter::remove(
            STOP_WORDS.iter().map(|w| w.to_string()),
        ))
        .filter(Stemmer::new(Language::English))
        .build()
}

fn kind_code(kind: DocKind) -> u64 {
    match kind {
        DocKind::Episode => 1,
        DocKind::Node => 2,
        DocKind::Edge => 3,
        DocKind::Community => 4,
        DocKind::Web => 5,
    }
}

fn kind_from_code(code: u64) -> Option<DocKind> {
    Some(match code {
        1 => DocKind::Episode,
        2 => DocKind::Node,
        3 => DocKind::Edge,
        4 => DocKind::Community,
        5 => DocKind::Web,
        _ => return None,
    })
}

/// A searchable index: one searcher, built once, shared by every request.
pub(crate) struct SearchIndex {
    searcher: Searcher,
    fields: Fields,
    analyzer: TextAnalyzer,
}

impl SearchIndex {
    /// Indexes `docs` in memory.
    pub(crate) fn build_in_ram(docs: &[Document]) -> Result<Self, RetrievalError> {
        let (schema, _) = schema();
        Self::build(Index::create_in_ram(schema), docs)
    }

    /// Indexes `docs` into the (empty) folder `dir`, persisted for [`SearchIndex::open`].
    pub(crate) fn build_in_dir(dir: &Path, docs: &[Document]) -> Result<Self, RetrievalError> {
        let (schema, _) = schema();
        let index = Index::create_in_dir(dir, schema)
            .map_err(|e| RetrievalError::index(format!("creating {}", dir.display()), e))?;
        Self::build(index, docs)
    }

    fn build(index: Index, docs: &[Document]) -> Result<Self, RetrievalError> {
        index.tokenizers().register(TOKENIZER, analyzer());
        let (_, fields) = schema();
        let err = |e: tantivy::TantivyError| RetrievalError::index("indexing documents", e);
        let mut writer: IndexWriter = index
            .writer_with_num_threads(1, WRITER_MEMORY)
            .map_err(err)?;
        for doc in docs {
            let mut indexed = TantivyDocument::default();
            indexed.add_text(fields.id, &doc.id);
            indexed.add_text(fields.title, &doc.title);
            indexed.add_text(fields.url, &doc.url);
            indexed.add_text(fields.content, &doc.content);
            indexed.add_u64(fields.kind, kind_code(doc.kind));
            if let Some((title, content)) = indexed_fields(&fields, doc.kind) {
                indexed.add_text(title, &doc.title);
                indexed.add_text(content, &doc.content);
            }
            writer.add_document(indexed).map_err(err)?;
        }
        writer.commit().map_err(err)?;
        writer.wait_merging_threads().map_err(err)?;
        Self::open_index(index, fields)
    }

    /// Opens an index persisted by [`SearchIndex::build_in_dir`].
    pub(crate) fn open(dir: &Path) -> Result<Self, RetrievalError> {
        let context = || format!("opening {}", dir.display());
        let index = Index::open_in_dir(dir).map_err(|e| RetrievalError::index(context(), e))?;
        let (expected, fields) = schema();
        if index.schema() != expected {
            return Err(RetrievalError::Invalid {
                path: dir.to_path_buf(),
                message: "the index was written by an incompatible version; re-run ingest".into(),
            });
        }
        index.tokenizers().register(TOKENIZER, analyzer());
        Self::open_index(index, fields)
    }

    fn open_index(index: Index, fields: Fields) -> Result<Self, RetrievalError> {
        // Manual reload: the index never changes after build, so no watcher thread.
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| RetrievalError::index("opening a reader", e))?;
        Ok(Self {
            searcher: reader.searcher(),
            fields,
            analyzer: analyzer(),
        })
    }

    /// Number of indexed documents.
    pub(crate) fn num_docs(&self) -> u64 {
        self.searcher.num_docs()
    }

    /// The best documents of the enabled kinds for `query`, best first, with BM25 scores.
    pub(crate) fn search(
        &self,
        query: &str,
        options: &RetrievalOptions,
    ) -> Result<Vec<Document>, RetrievalError> {
        let fields: Vec<(Field, Field, f32)> = [
            (options.episodes, DocKind::Episode),
            (options.nodes, DocKind::Node),
            (options.edges, DocKind::Edge),
            (options.communities, DocKind::Community),
        ]
        .into_iter()
        .filter(|(enabled, _)| *enabled)
        .filter_map(|(_, kind)| {
            let (title, content) = indexed_fields(&self.fields, kind)?;
            Some((title, content, title_boost(kind)))
        })
        .collect();
        // TopDocs panics on 0 and preallocates by limit: keep it within 1..=num_docs.
        let limit = options.limit.min(self.num_docs() as usize);
        let Some(query) = self.query(query, &fields).filter(|_| limit > 0) else {
            return Ok(Vec::new());
        };
        let err = |e: tantivy::TantivyError| RetrievalError::index("searching", e);
        let hits = self
            .searcher
            .search(&query, &TopDocs::with_limit(limit))
            .map_err(err)?;
        hits.into_iter()
            .map(|(score, address)| {
                let stored: TantivyDocument = self.searcher.doc(address).map_err(err)?;
                self.document(&stored, score)
            })
            .collect()
    }

    /// Any analyzed word of `text` in the given (title, content) fields, titles boosted.
    fn query(&self, text: &str, fields: &[(Field, Field, f32)]) -> Option<BooleanQuery> {
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
        for (word, (title, content, boost)) in words
            .iter()
            .flat_map(|w| fields.iter().map(move |f| (w, f)))
        {
            let term = |field| {
                TermQuery::new(
                    Term::from_field_text(field, word),
                    IndexRecordOption::WithFreqs,
                )
            };
            let title = BoostQuery::new(Box::new(term(*title)), *boost);
            clauses.push((Occur::Should, Box::new(title)));
            clauses.push((Occur::Should, Box::new(term(*content))));
        }
        Some(BooleanQuery::new(clauses))
    }

    fn document(&self, stored: &TantivyDocument, score: f32) -> Result<Document, RetrievalError> {
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
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, title: &str, content: &str, kind: DocKind) -> Document {
        Document {
            id: id.into(),
            title: title.into(),
            url: format!("kb://{id}"),
            content: content.into(),
            score: 0.0,
            kind,
        }
    }

    fn sample() -> SearchIndex {
        SearchIndex::build_in_ram(&[
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

    fn all(limit: usize) -> RetrievalOptions {
        RetrievalOptions {
            limit,
            nodes: true,
            edges: true,
            episodes: true,
            communities: true,
        }
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
