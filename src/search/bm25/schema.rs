//! The BM25 index schema, shared by the writer (ingest) and the reader (search): stored fields,
//! per-kind indexed fields, the English analyzer, and how a document becomes an index entry.
//!
//! Every document stores id, title, url, content and kind. Its title and content are also
//! indexed in the fields of its own kind (`episode_title`, `edge_content`, ...), so each kind
//! keeps its own BM25 statistics and the kind toggles of a request choose the fields searched.
//! A passage's title is indexed as two fields: its document title (`episode_title`) and its
//! heading path (`episode_heading`), each with its own boost ([`boosts`]).
//! The analyzer name is recorded in the schema, so a persisted index must be opened with the
//! same analyzer registered (see `search::bm25::SearchIndex::open`).
use crate::knowledge::{split_title, DocKind, Document};
use crate::search::cap::source_key;
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STORED,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};
use tantivy::TantivyDocument;

/// Name under which the analyzer is registered; stored in the index schema.
pub(crate) const TOKENIZER: &str = "bounded_rag_en";

/// How much a title match weighs against a content match, by kind. Passage headings and
/// community names summarise their text, so they count more; node names and edge titles
/// ("source — relation — target") restate what the content already says, so they do not.
pub(crate) fn title_boost(kind: DocKind) -> f32 {
    match kind {
        DocKind::Episode => 1.5,
        DocKind::Community => 1.5,
        DocKind::Node | DocKind::Edge | DocKind::Web => 1.0,
    }
}

/// Boost of a match in a passage's heading path. A heading names what its section is about;
/// the document title ([`title_boost`]) names what the whole document is about, and is shared
/// by all its passages, so it also lifts the passages of a document that is about the query.
pub(crate) const HEADING_BOOST: f32 = 1.5;

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

/// Name of the fast field holding each item's source key.
pub(crate) const SOURCE_FIELD: &str = "source";

/// What a document is counted under for the per-document cap: a passage's file (its URL
/// without the `#n` fragment), any other item itself.
pub(crate) fn source_path(doc: &Document) -> &str {
    match doc.kind {
        DocKind::Episode => doc.url.split('#').next().unwrap_or(&doc.url),
        _ => &doc.url,
    }
}

/// The fields of the schema.
#[derive(Clone, Copy)]
pub(crate) struct Fields {
    pub id: Field,
    pub title: Field,
    pub url: Field,
    pub content: Field,
    pub kind: Field,
    /// Indexed (title, content) per kind, in [`SEARCHABLE`] order.
    pub indexed: [(Field, Field); 4],
    /// A passage's indexed heading path.
    pub(crate) episode_heading: Field,
    /// Fast field: the key of the item's source document (see [`source_path`]).
    pub source: Field,
}

pub(crate) fn schema() -> (Schema, Fields) {
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
    let episode_heading = builder.add_text_field("episode_heading", text.clone());
    let source = builder.add_u64_field(SOURCE_FIELD, FAST);
    let fields = Fields {
        id,
        title,
        url,
        content,
        kind,
        indexed,
        episode_heading,
        source,
    };
    (builder.build(), fields)
}

/// The indexed (title, content) fields of a kind; `None` for kinds never searched (web).
pub(crate) fn indexed_fields(fields: &Fields, kind: DocKind) -> Option<(Field, Field)> {
    let slot = SEARCHABLE.iter().position(|k| *k == kind)?;
    Some(fields.indexed[slot])
}

pub(crate) fn analyzer() -> TextAnalyzer {
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

pub(crate) fn kind_from_code(code: u64) -> Option<DocKind> {
    Some(match code {
        1 => DocKind::Episode,
        2 => DocKind::Node,
        3 => DocKind::Edge,
        4 => DocKind::Community,
        5 => DocKind::Web,
        _ => return None,
    })
}

/// The stored and indexed fields of one document.
pub(crate) fn to_indexed(fields: &Fields, doc: &Document) -> TantivyDocument {
    let mut indexed = TantivyDocument::default();
    indexed.add_text(fields.id, &doc.id);
    indexed.add_text(fields.title, &doc.title);
    indexed.add_text(fields.url, &doc.url);
    indexed.add_text(fields.content, &doc.content);
    indexed.add_u64(fields.kind, kind_code(doc.kind));
    indexed.add_u64(fields.source, source_key(source_path(doc)));
    if let Some((title, content)) = indexed_fields(fields, doc.kind) {
        if doc.kind == DocKind::Episode {
            let (document, heading) = split_title(&doc.title);
            indexed.add_text(title, document);
            indexed.add_text(fields.episode_heading, heading);
        } else {
            indexed.add_text(title, &doc.title);
        }
        indexed.add_text(content, &doc.content);
    }
    indexed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_only_web_is_unsearchable() {
        let (_, fields) = schema();
        for kind in SEARCHABLE.into_iter().chain([DocKind::Web]) {
            assert_eq!(kind_from_code(kind_code(kind)), Some(kind));
            assert_eq!(
                indexed_fields(&fields, kind).is_some(),
                kind != DocKind::Web
            );
        }
        assert_eq!(kind_from_code(0), None);
    }

    #[test]
    fn analyzer_drops_question_words_and_stems() {
        let mut analyzer = analyzer();
        let mut stream = analyzer.token_stream("What CAUSES cankers on Durian trees?");
        let mut words = Vec::new();
        while stream.advance() {
            words.push(stream.token().text.clone());
        }
        assert_eq!(words, ["caus", "canker", "durian", "tree"]);
    }
}
