//! What a knowledge base holds, counted: the sources count it, a bundle's manifest records it,
//! a loaded knowledge base reports it.
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a knowledge base holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KbStats {
    /// Text documents (files with at least one passage).
    pub documents: usize,
    /// Passages of those documents ([`DocKind::Episode`](crate::knowledge::DocKind::Episode)).
    pub passages: usize,
    /// Entities ([`DocKind::Node`](crate::knowledge::DocKind::Node)).
    pub nodes: usize,
    /// Relations ([`DocKind::Edge`](crate::knowledge::DocKind::Edge)).
    pub edges: usize,
    /// Community summaries ([`DocKind::Community`](crate::knowledge::DocKind::Community)).
    pub communities: usize,
}

impl KbStats {
    /// Number of indexed, searchable items (passages, nodes, edges, communities).
    pub fn indexed(&self) -> usize {
        self.passages + self.nodes + self.edges + self.communities
    }
}

impl fmt::Display for KbStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} documents ({} passages), {} nodes, {} edges, {} communities",
            self.documents, self.passages, self.nodes, self.edges, self.communities
        )
    }
}
