//! One source file as a reader left it: text, or a PDF's pages, with its paths and format.
use crate::knowledge::Format;
use std::path::{Path, PathBuf};

/// One source file: its path for errors, its `kb://` path (relative, `/`-separated), its
/// format (`None` for graph files and metadata sidecars) and what its reader made of it.
pub(crate) struct SourceFile {
    pub path: PathBuf,
    pub rel: String,
    pub format: Option<Format>,
    /// The text (Markdown-style for HTML, reStructuredText and Word; one row a line for CSV);
    /// empty for a PDF.
    pub text: String,
    /// A PDF's text, page by page.
    pub pages: Vec<String>,
}

impl SourceFile {
    /// A text file (its format told by `rel`'s extension).
    pub(crate) fn text(path: PathBuf, rel: &str, text: String) -> Self {
        Self {
            format: Format::of(Path::new(rel)),
            path,
            rel: rel.to_owned(),
            text,
            pages: Vec::new(),
        }
    }
}
