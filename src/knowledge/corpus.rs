//! A corpus: the documents of a knowledge base ready to index or write, as ingest and sync
//! read them from sources and every store's writer takes them.
use super::{DocKind, Document, DocumentInfo, KbStats, MetaTable, SkippedFile};

/// The name the graph records (entities, relations, communities) are written under as one
/// document, beside the source documents' paths (a `#` never starts a source's path).
pub(crate) const GRAPH_DOCUMENT: &str = "#graph";

/// A document of a corpus by name, with its items' corpus positions ([`Corpus::groups`]).
pub(crate) type Group = (String, Vec<usize>);

/// The documents of a knowledge base, ready to index: passages first, in the order of their
/// documents, then the graph records.
pub(crate) struct Corpus {
    pub docs: Vec<Document>,
    pub stats: KbStats,
    /// The documents' metadata, by corpus position.
    pub meta: MetaTable,
    /// Each text document: its path, format, pages and passages.
    pub documents: Vec<DocumentInfo>,
    /// Files found but not ingested, with the reason.
    pub skipped: Vec<SkippedFile>,
}

impl Corpus {
    /// The documents for which `selected(path)` holds, each with its items' corpus positions;
    /// the graph records as one document, [`GRAPH_DOCUMENT`], when it is selected.
    pub(crate) fn groups(&self, selected: impl Fn(&str) -> bool) -> Vec<Group> {
        let mut groups = Vec::new();
        let mut at = 0;
        for info in &self.documents {
            if selected(&info.path) {
                groups.push((info.path.clone(), (at..at + info.passages).collect()));
            }
            at += info.passages;
        }
        let graph: Vec<usize> = (at..self.docs.len())
            .filter(|i| self.docs[*i].kind != DocKind::Episode)
            .collect();
        if !graph.is_empty() && selected(GRAPH_DOCUMENT) {
            groups.push((GRAPH_DOCUMENT.to_owned(), graph));
        }
        groups
    }
}
