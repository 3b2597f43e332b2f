//! HTML sources: the markup is rendered to plain text by `html2text` (scripts, styles and tags
//! dropped, entities decoded, headings kept as `#` lines), so an HTML page is then split into
//! passages exactly like a Markdown document.
use crate::ingest::IngestError;
use std::path::Path;

/// Wide enough that no heading or sentence is wrapped onto a second line.
const WIDTH: usize = 100_000;

/// The text of an HTML document, with Markdown-style headings.
pub(crate) fn to_text(path: &Path, html: &[u8]) -> Result<String, IngestError> {
    // The rich decorator marks links and emphasis with annotations, not characters, and
    // keeps headings as `#` lines.
    let text = html2text::config::rich()
        .string_from_read(html, WIDTH)
        .map_err(|e| IngestError::Invalid {
            path: path.to_path_buf(),
            message: format!("not readable as HTML: {e}"),
        })?;
    // Trailing spaces from table and block padding carry nothing.
    Ok(text
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::sources::passages;

    #[test]
    fn tags_scripts_and_entities_become_plain_text_with_headings() {
        let html = br#"<!doctype html><html><head><title>T</title><style>p{color:red}</style>
            <script>var x = "<p>not text</p>";</script></head>
            <body><h1>Pink disease</h1><p>A <b>pink</b> crust &amp; white threads.</p>
            <h2>Control</h2><p>Prune <a href="x.html">infected</a> branches.</p></body></html>"#;
        let text = to_text(Path::new("a.html"), html).unwrap();
        assert!(!text.contains('<'), "{text}");
        assert!(!text.contains("not text"), "{text}");
        assert!(!text.contains("color"), "{text}");
        let (title, parts) = passages::split(&text, "fallback");
        assert_eq!(title, "Pink disease");
        assert!(
            parts[0].text.contains("A pink crust & white threads."),
            "{parts:?}"
        );
        assert!(
            parts[0].text.contains("Prune infected branches."),
            "{parts:?}"
        );
    }
}
