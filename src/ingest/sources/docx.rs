//! Word documents (`.docx`): a zip of XML parts, read with `zip` and `quick-xml`, turned into
//! Markdown-style text so the heading chunking of [`super::passages`] applies.
//!
//! A paragraph whose style is a heading ("heading 1".."heading 9", "Title", or a style with an
//! outline level) becomes a `#` line of that level; table rows become text rows (`header:
//! value; ...` under a header row); deleted text (tracked changes) is left out. Each part is
//! read with a size bound, so a small zip cannot inflate without limit.
use crate::knowledge::SkipReason;
use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;
use std::collections::HashMap;
use std::io::{Cursor, Read};

/// Uncompressed size of one XML part at most.
const MAX_PART_BYTES: u64 = 64 << 20;

/// The text of a `.docx` file, with `#` headings.
pub(crate) fn to_text(bytes: &[u8]) -> Result<String, SkipReason> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| SkipReason::Corrupt {
        detail: format!("not a zip archive: {e}"),
    })?;
    let document = part(&mut zip, "word/document.xml")?.ok_or_else(|| SkipReason::Corrupt {
        detail: "no word/document.xml".into(),
    })?;
    let styles = match part(&mut zip, "word/styles.xml")? {
        Some(xml) => heading_styles(&xml).unwrap_or_default(),
        None => HashMap::new(),
    };
    body(&document, &styles).map_err(|e| SkipReason::Corrupt {
        detail: format!("word/document.xml: {e}"),
    })
}

/// One part of the archive as text, read up to [`MAX_PART_BYTES`].
fn part(
    zip: &mut zip::ZipArchive<Cursor<&[u8]>>,
    name: &str,
) -> Result<Option<String>, SkipReason> {
    let entry = match zip.by_name(name) {
        Ok(entry) => entry,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => {
            return Err(SkipReason::Corrupt {
                detail: format!("{name}: {e}"),
            })
        }
    };
    let mut text = String::new();
    let read = entry.take(MAX_PART_BYTES + 1).read_to_string(&mut text);
    read.map_err(|e| SkipReason::Corrupt {
        detail: format!("{name}: {e}"),
    })?;
    if text.len() as u64 > MAX_PART_BYTES {
        return Err(SkipReason::Corrupt {
            detail: format!("{name} is over {MAX_PART_BYTES} bytes uncompressed"),
        });
    }
    Ok(Some(text))
}

/// Heading level (1..=9) by style id, from `word/styles.xml`.
fn heading_styles(xml: &str) -> Result<HashMap<String, usize>, quick_xml::Error> {
    let mut levels = HashMap::new();
    let mut reader = Reader::from_str(xml);
    let mut current: Option<String> = None;
    loop {
        match reader.read_event()? {
            Event::Eof => break,
            Event::Start(e) | Event::Empty(e) => match e.local_name().as_ref() {
                "style" => current = attr(&e, "w:styleId"),
                "name" => {
                    if let (Some(id), Some(name)) = (&current, attr(&e, "w:val")) {
                        if let Some(level) = level_of_name(&name) {
                            levels.insert(id.clone(), level);
                        }
                    }
                }
                "outlineLvl" => {
                    let level = attr(&e, "w:val").and_then(|v| v.parse::<usize>().ok());
                    if let (Some(id), Some(level @ 0..=8)) = (&current, level) {
                        levels.entry(id.clone()).or_insert(level + 1);
                    }
                }
                _ => {}
            },
            Event::End(e) if e.local_name().as_ref() == "style" => current = None,
            _ => {}
        }
    }
    Ok(levels)
}

/// "heading 2" → 2, "Title" → 1 (Word's built-in names, any case).
fn level_of_name(name: &str) -> Option<usize> {
    let lower = name.to_ascii_lowercase();
    if lower == "title" {
        return Some(1);
    }
    let digits = lower.strip_prefix("heading")?.trim();
    match digits.parse::<usize>() {
        Ok(level @ 1..=9) => Some(level),
        _ => None,
    }
}

/// A style id's heading level: from `styles.xml`, else by the built-in ids (`Heading2`).
fn level_of_style(id: &str, styles: &HashMap<String, usize>) -> Option<usize> {
    styles.get(id).copied().or_else(|| level_of_name(id))
}

/// Code paragraph styles: pandoc's `SourceCode`, Word's `HTMLPreformatted`, any `...Code...`.
fn is_code_style(id: &str) -> bool {
    let lower = id.to_ascii_lowercase();
    lower.contains("code") || lower.contains("preformatted") || lower.contains("verbatim")
}

/// Where the text of `document.xml` goes as it is read.
#[derive(Default)]
struct Body {
    out: String,
    paragraph: String,
    level: Option<usize>,
    /// The paragraph is code (a `SourceCode`, `Code` or preformatted style): kept as a fenced
    /// block, its line breaks kept, as a Markdown code block is.
    code: bool,
    /// Nested tables: the rows of each, each row its cells.
    tables: Vec<Vec<Vec<String>>>,
    in_text: bool,
}

impl Body {
    fn end_paragraph(&mut self) {
        let text = std::mem::take(&mut self.paragraph);
        let code = std::mem::take(&mut self.code);
        let text = if code {
            text.trim_matches('\n')
        } else {
            text.trim()
        };
        let level = self.level.take();
        if let Some(row) = self.tables.last_mut().and_then(|t| t.last_mut()) {
            let cell = row.last_mut();
            if let Some(cell) = cell.filter(|_| !text.is_empty()) {
                if !cell.is_empty() {
                    cell.push(' ');
                }
                cell.push_str(text);
            }
            return;
        }
        if text.is_empty() {
            return;
        }
        if code {
            self.out.push_str(&format!("```\n{text}\n```\n\n"));
            return;
        }
        if let Some(level) = level {
            self.out.push_str(&"#".repeat(level));
            self.out.push(' ');
        }
        self.out.push_str(text);
        self.out.push_str("\n\n");
    }

    fn end_table(&mut self) {
        let Some(rows) = self.tables.pop() else {
            return;
        };
        let lines = table_rows(&rows);
        match self.tables.last_mut().and_then(|t| t.last_mut()) {
            // A table inside a cell joins that cell's text.
            Some(row) => {
                if let Some(cell) = row.last_mut() {
                    cell.push_str(&lines.join(" "));
                }
            }
            None if !lines.is_empty() => {
                self.out.push_str(&lines.join("\n"));
                self.out.push_str("\n\n");
            }
            None => {}
        }
    }
}

/// A table as text rows: the first row is the header; every other row reads
/// `header: value; ...` (cells without a header, or empty, as they are).
pub(crate) fn table_rows(rows: &[Vec<String>]) -> Vec<String> {
    let Some((header, rest)) = rows.split_first() else {
        return Vec::new();
    };
    let mut lines = vec![header.join(" | ")];
    for row in rest {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .filter(|(_, value)| !value.is_empty())
            .map(|(i, value)| match header.get(i).filter(|h| !h.is_empty()) {
                Some(name) => format!("{name}: {value}"),
                None => value.clone(),
            })
            .collect();
        if !cells.is_empty() {
            lines.push(cells.join("; "));
        }
    }
    lines.retain(|l| !l.trim().is_empty() && l.trim() != "|");
    lines
}

fn body(xml: &str, styles: &HashMap<String, usize>) -> Result<String, quick_xml::Error> {
    let mut reader = Reader::from_str(xml);
    let mut body = Body::default();
    loop {
        let event = reader.read_event()?;
        match event {
            Event::Eof => break,
            Event::Start(e) => match e.local_name().as_ref() {
                "t" => body.in_text = true,
                "tbl" => body.tables.push(Vec::new()),
                "tr" => {
                    if let Some(table) = body.tables.last_mut() {
                        table.push(Vec::new());
                    }
                }
                "tc" => {
                    if let Some(row) = body.tables.last_mut().and_then(|t| t.last_mut()) {
                        row.push(String::new());
                    }
                }
                _ => {}
            },
            Event::Empty(e) => match e.local_name().as_ref() {
                "pStyle" => {
                    let id = attr(&e, "w:val").unwrap_or_default();
                    body.level = level_of_style(&id, styles);
                    body.code = is_code_style(&id);
                }
                "tab" => body.paragraph.push('\t'),
                "br" | "cr" => body.paragraph.push(if body.code { '\n' } else { ' ' }),
                "p" => body.end_paragraph(),
                _ => {}
            },
            Event::End(e) => match e.local_name().as_ref() {
                "t" => body.in_text = false,
                "p" => body.end_paragraph(),
                "tbl" => body.end_table(),
                _ => {}
            },
            Event::Text(t) if body.in_text => body.paragraph.push_str(&t.xml10_content()),
            Event::CData(t) if body.in_text => body.paragraph.push_str(&t.xml10_content()),
            Event::GeneralRef(r) if body.in_text => {
                if let Some(c) = r.resolve_char_ref()? {
                    body.paragraph.push(c);
                } else {
                    let named = match &*r.xml10_content() {
                        "amp" => "&",
                        "lt" => "<",
                        "gt" => ">",
                        "quot" => "\"",
                        "apos" => "'",
                        _ => "",
                    };
                    body.paragraph.push_str(named);
                }
            }
            _ => {}
        }
    }
    Ok(body.out.trim_end().to_owned())
}

fn attr(e: &BytesStart<'_>, name: &str) -> Option<String> {
    let attr = e.try_get_attribute(name).ok()??;
    attr.normalized_value(quick_xml::XmlVersion::Explicit1_0)
        .ok()
        .map(|v| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_paragraphs_and_tables_become_text() {
        let xml = r#"<w:document xmlns:w="w"><w:body>
            <w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Pests</w:t></w:r></w:p>
            <w:p><w:r><w:t xml:space="preserve">Borers &amp; </w:t></w:r><w:r><w:del><w:delText>gone</w:delText></w:del><w:t>mites.</w:t></w:r></w:p>
            <w:tbl><w:tr><w:tc><w:p><w:r><w:t>Pest</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Part</w:t></w:r></w:p></w:tc></w:tr>
            <w:tr><w:tc><w:p><w:r><w:t>Borer</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Stem</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
            <w:p><w:pPr><w:pStyle w:val="Custom"/></w:pPr><w:r><w:t>Sub</w:t></w:r></w:p>
            <w:p><w:pPr><w:pStyle w:val="SourceCode"/></w:pPr><w:r><w:t># not a heading</w:t><w:br/><w:t xml:space="preserve">  x = 1</w:t></w:r></w:p>
            </w:body></w:document>"#;
        let styles = HashMap::from([("Custom".to_owned(), 2)]);
        assert_eq!(
            body(xml, &styles).unwrap(),
            "# Pests\n\nBorers & mites.\n\nPest | Part\nPest: Borer; Part: Stem\n\n## Sub\n\n\
             ```\n# not a heading\n  x = 1\n```"
        );
        let styles_xml = r#"<w:styles><w:style w:styleId="H"><w:name w:val="heading 3"/></w:style>
            <w:style w:styleId="O"><w:name w:val="Mine"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style></w:styles>"#;
        let levels = heading_styles(styles_xml).unwrap();
        assert_eq!((levels["H"], levels["O"]), (3, 2));
    }

    #[test]
    fn not_a_zip_is_corrupt() {
        let err = to_text(b"PK\x03\x04 nothing more").unwrap_err();
        assert!(matches!(err, SkipReason::Corrupt { .. }), "{err}");
    }
}
