//! What a search returns: a [`Document`] of some [`DocKind`], the one type every room passes
//! knowledge in (the knowledge base, web search, the workflow's prompts, thread history), and
//! how a passage's title joins its document's title to its headings.
use serde::{Deserialize, Serialize};

/// Separates a passage title's document title from its heading path ("Document — Section"):
/// ingest's passages are titled so, and the index and the description split them apart again.
pub(crate) const TITLE_SEPARATOR: &str = " — ";

/// The (document title, heading path) of a passage title made with [`TITLE_SEPARATOR`].
pub(crate) fn split_title(title: &str) -> (&str, &str) {
    title.split_once(TITLE_SEPARATOR).unwrap_or((title, ""))
}

/// What kind of knowledge a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocKind {
    /// A passage of a source document (an "episode" of text).
    Episode,
    /// An entity (knowledge-graph node) with its summary.
    Node,
    /// A relation between two entities, stated as a fact.
    Edge,
    /// A summary of a group of related entities.
    Community,
    /// A web search result.
    Web,
}

/// One retrieved piece of context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// Stable id within its source (passage id, entity id, URL).
    pub id: String,
    /// Human title used in citations.
    pub title: String,
    /// Where it came from: a URL, or a `kb://` path for the knowledge base.
    pub url: String,
    /// The text given to the model.
    pub content: String,
    /// Search score (BM25 or the web engine's), higher is better.
    pub score: f32,
    /// Kind of knowledge.
    pub kind: DocKind,
    /// The knowledge base ranked it clearly relevant: first by BM25 with a clear lead over the
    /// next hit, or near the top of both the BM25 and the vector ranking. A grader that judges
    /// by shared words alone keeps such a document even when the question uses other words.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clear_match: bool,
    /// The knowledge base added it as a one-hop neighbour (a relation or community) of an
    /// entity the query matched, not as a search hit of its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_graph: bool,
    /// Hybrid retrieval only: its document's rank (from 1) among the vector ranking's
    /// documents (each ranked by its nearest passage), when among the first three (search's `NEAR_RANKS`):
    /// the documents nearest the question by meaning. The offline provider's grader, which
    /// judges by shared words, keeps their passages (found in other words: BENCHMARKS.md "The
    /// vector ranking's lead kept, and its first documents' passages"); unlike [`Document::clear_match`] it does
    /// not overrule a model's grade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_rank: Option<u32>,
}

#[cfg(test)]
impl Document {
    /// A passage for a unit test: an episode scored 1.0, with no rank marks.
    pub(crate) fn passage(
        id: impl Into<String>,
        title: impl Into<String>,
        url: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            title: title.into(),
            url: url.into(),
            content: content.into(),
            score: 1.0,
            kind: DocKind::Episode,
            clear_match: false,
            from_graph: false,
            vector_rank: None,
        }
    }
}

impl Document {
    /// Of one of the vector ranking's first three documents (search's `NEAR_RANKS`).
    pub fn is_near(&self) -> bool {
        self.vector_rank.is_some()
    }
}
