//! The document formats ingest reads, told by file extension, and what each one is recorded as
//! in a bundle's manifest.
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// A document format ingest reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// `.md`, `.markdown`.
    Markdown,
    /// `.txt`.
    Text,
    /// `.html`, `.htm`.
    Html,
    /// `.pdf`: the text layer, page by page.
    Pdf,
    /// `.docx`: Word's Office Open XML.
    Docx,
    /// `.rst`, `.rest`: reStructuredText.
    Rst,
    /// `.csv`: comma-separated rows under a header row.
    Csv,
    /// `.tsv`, `.tab`: tab-separated rows under a header row.
    Tsv,
}

/// Every format, for messages that list them.
pub(crate) const ALL: [Format; 8] = [
    Format::Markdown,
    Format::Text,
    Format::Html,
    Format::Pdf,
    Format::Docx,
    Format::Rst,
    Format::Csv,
    Format::Tsv,
];

impl Format {
    /// The format of a file named `path`, by its extension (any case); `None` for other files.
    pub(crate) fn of(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        ALL.into_iter()
            .find(|format| format.extensions().contains(&ext.as_str()))
    }

    /// The extensions of this format, lower case, without the dot.
    pub(crate) fn extensions(self) -> &'static [&'static str] {
        match self {
            Self::Markdown => &["md", "markdown"],
            Self::Text => &["txt"],
            Self::Html => &["html", "htm"],
            Self::Pdf => &["pdf"],
            Self::Docx => &["docx"],
            Self::Rst => &["rst", "rest"],
            Self::Csv => &["csv"],
            Self::Tsv => &["tsv", "tab"],
        }
    }

    /// Whether reading the format needs a third-party parser (PDF, Word, CSV/TSV): the
    /// `formats` feature, enabled by ingest and the CLI (see `read`).
    pub(crate) fn needs_parser(self) -> bool {
        match self {
            Self::Pdf | Self::Docx | Self::Csv | Self::Tsv => true,
            Self::Markdown | Self::Text | Self::Html | Self::Rst => false,
        }
    }

    /// Whether the reader works on bytes (a binary format) rather than UTF-8 text.
    pub(crate) fn is_binary(self) -> bool {
        matches!(self, Self::Pdf | Self::Docx)
    }

    /// Every extension ingest reads, as `.md, .markdown, ...` for messages.
    pub(crate) fn all_extensions() -> String {
        let exts: Vec<String> = ALL
            .iter()
            .flat_map(|f| f.extensions())
            .map(|e| format!(".{e}"))
            .collect();
        exts.join(", ")
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Markdown => "markdown",
            Self::Text => "text",
            Self::Html => "html",
            Self::Pdf => "pdf",
            Self::Docx => "docx",
            Self::Rst => "rst",
            Self::Csv => "csv",
            Self::Tsv => "tsv",
        })
    }
}

/// A document ingested: recorded in the bundle manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentInfo {
    /// Relative, `/`-separated path under the source folder.
    pub path: String,
    /// How it was read.
    pub format: Format,
    /// Pages, for a PDF.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<usize>,
    /// Passages indexed.
    pub passages: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_by_extension_in_any_case() {
        let of = |name: &str| Format::of(Path::new(name));
        assert_eq!(of("a/b.PDF"), Some(Format::Pdf));
        assert_eq!(of("notes.Markdown"), Some(Format::Markdown));
        assert_eq!(of("x.htm"), Some(Format::Html));
        assert_eq!(of("guide.rst"), Some(Format::Rst));
        assert_eq!(of("t.tsv"), Some(Format::Tsv));
        assert_eq!(of("w.docx"), Some(Format::Docx));
        assert_eq!(of("image.png"), None);
        assert_eq!(of("README"), None);
        assert_eq!(
            Format::all_extensions(),
            ".md, .markdown, .txt, .html, .htm, .pdf, .docx, .rst, .rest, .csv, .tsv, .tab"
        );
    }
}
