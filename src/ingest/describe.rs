//! What a knowledge base covers, in a few hundred characters, for the router: derived at ingest
//! from the documents' titles and section headings when the operator gives no description
//! (`ingest --description`). The router reads it to decide whether a question belongs to the
//! knowledge base, so it names the knowledge base's own subjects and nothing else.
//!
//! Titles come first, the documents with the most passages first (the bulk of the knowledge
//! base); then the section headings shared by the most documents. Both are cut to a budget of
//! characters, saying how many were left out. The same documents give the same description.

use crate::knowledge::{DocKind, Document, TITLE_SEPARATOR};
use std::collections::HashMap;

/// Most characters of a derived description (about 200 tokens).
pub(crate) const MAX_CHARS: usize = 700;
/// Of [`MAX_CHARS`], the part the titles may take.
const TITLE_CHARS: usize = 460;

/// The operator's description when given, else the one derived from `docs`.
pub(crate) fn given_or_derived(given: Option<&str>, docs: &[Document]) -> Option<String> {
    given.map(str::to_owned).or_else(|| derive(docs))
}

/// The description of the passages among `docs`; `None` when there are none.
pub(crate) fn derive(docs: &[Document]) -> Option<String> {
    let mut titles: Vec<Tally> = Vec::new();
    let mut title_at: HashMap<&str, usize> = HashMap::new();
    let mut headings: Vec<Tally> = Vec::new();
    let mut heading_at: HashMap<String, usize> = HashMap::new();
    for doc in docs.iter().filter(|d| d.kind == DocKind::Episode) {
        let source = doc.url.split('#').next().unwrap_or_default();
        let mut parts = doc.title.split(TITLE_SEPARATOR);
        let title = parts.next().unwrap_or_default().trim();
        if title.is_empty() {
            continue;
        }
        let at = *title_at.entry(title).or_insert_with(|| {
            titles.push(Tally::new(title));
            titles.len() - 1
        });
        titles[at].count += 1;
        for heading in parts.map(str::trim).filter(|h| !h.is_empty()) {
            let key = heading.to_lowercase();
            let at = *heading_at.entry(key).or_insert_with(|| {
                headings.push(Tally::new(heading));
                headings.len() - 1
            });
            headings[at].add_source(source);
        }
    }
    if titles.is_empty() {
        return None;
    }
    let documents = titles.len();
    let mut out = format!(
        "{documents} document{}: ",
        if documents == 1 { "" } else { "s" }
    );
    list(&mut out, ranked(titles), TITLE_CHARS);
    if !headings.is_empty() {
        out.push_str(". Sections include: ");
        list(&mut out, ranked(headings), MAX_CHARS);
    }
    out.push('.');
    Some(out)
}

/// A title or heading with how often it occurs, in order of first occurrence.
struct Tally {
    text: String,
    /// Passages (titles) or documents (headings).
    count: usize,
    last_source: String,
}

impl Tally {
    fn new(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            count: 0,
            last_source: String::new(),
        }
    }

    /// Counts `source` once, whatever number of its passages carry the heading (passages of a
    /// document come together).
    fn add_source(&mut self, source: &str) {
        if self.count == 0 || self.last_source != source {
            self.count += 1;
            self.last_source = source.to_owned();
        }
    }
}

/// Most frequent first; ties in order of first occurrence (the sort is stable).
fn ranked(mut items: Vec<Tally>) -> Vec<String> {
    items.sort_by_key(|t| std::cmp::Reverse(t.count));
    items.into_iter().map(|t| t.text).collect()
}

/// Appends `items` joined by `; ` while `out` stays within `limit` characters, then how many
/// did not fit.
fn list(out: &mut String, items: Vec<String>, limit: usize) {
    let total = items.len();
    let mut shown = 0;
    for item in items {
        let sep = if shown == 0 { "" } else { "; " };
        // Room is kept for the "and N more" that may follow.
        if shown > 0 && out.chars().count() + sep.len() + item.chars().count() + 16 > limit {
            break;
        }
        out.push_str(sep);
        out.push_str(&item);
        shown += 1;
    }
    if shown < total {
        out.push_str(&format!("; and {} more", total - shown));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(source: &str, title: &str) -> Document {
        Document {
            score: 0.0,
            ..Document::passage(
                format!("{source}/{title}"),
                title,
                format!("kb://{source}#p"),
                "text",
            )
        }
    }

    #[test]
    fn titles_by_size_then_headings_shared_by_most_documents() {
        let docs = [
            passage("a.md", "serde"),
            passage("a.md", "serde — Usage"),
            passage("a.md", "serde — License"),
            passage("b.md", "tokio"),
            passage("b.md", "tokio — Example"),
            passage("b.md", "tokio — Example — Details"),
            passage("b.md", "tokio — License"),
            passage("c.md", "anyhow"),
        ];
        assert_eq!(
            derive(&docs).unwrap(),
            "3 documents: tokio; serde; anyhow. Sections include: License; Usage; Example; \
             Details."
        );
    }

    #[test]
    fn a_long_list_is_cut_and_says_how_many_are_left_out() {
        let docs: Vec<Document> = (0..200)
            .map(|i| passage(&format!("{i}.md"), &format!("Document number {i:03}")))
            .collect();
        let text = derive(&docs).unwrap();
        assert!(
            text.starts_with("200 documents: Document number 000; "),
            "{text}"
        );
        assert!(text.chars().count() <= MAX_CHARS, "{}", text.len());
        let shown = text.matches("Document number").count();
        assert!(
            text.ends_with(&format!("; and {} more.", 200 - shown)),
            "{text}"
        );
    }

    #[test]
    fn no_passages_no_description() {
        let mut node = passage("nodes.jsonl", "Patch canker");
        node.kind = DocKind::Node;
        assert_eq!(derive(&[node]), None);
    }
}
