//! PDF documents: the text layer of each page, read with `lopdf`, in content-stream order
//! (the order typesetters such as pdfTeX and groff write a page in reading order).
//!
//! `lopdf` parses the file, decrypts what needs no password, and decodes each font's encoding;
//! this file only walks the text operators to place line breaks and word spaces, then tidies
//! the page ([`tidy`]): hyphenation at line ends joined, and running headers, footers and page
//! numbers removed. Page contents are decompressed under a bound, so a small file cannot
//! inflate without limit.
use super::skip::SkipReason;
use lopdf::content::Content;
use lopdf::{Document, Encoding, Object};
use std::collections::BTreeMap;

/// Decompressed content of one page at most (a page of text is a few kilobytes).
const MAX_PAGE_CONTENT: usize = 16 << 20;
/// A `TJ` adjustment below this (thousandths of an em, negative = move right) is a word
/// space; kerning is much smaller.
const WORD_GAP: f32 = -180.0;

/// The text of every page, in page order; a page without text is an empty string.
pub(crate) fn pages(bytes: &[u8]) -> Result<Vec<String>, SkipReason> {
    if !bytes.starts_with(b"%PDF-")
        && !bytes[..bytes.len().min(1024)]
            .windows(5)
            .any(|w| w == b"%PDF-")
    {
        return Err(SkipReason::Corrupt {
            detail: "no %PDF- header".into(),
        });
    }
    // Every complete PDF ends with `%%EOF` (a last incremental update's, at least).
    let tail = &bytes[bytes.len().saturating_sub(1024)..];
    if !tail.windows(5).any(|w| w == b"%%EOF") {
        return Err(SkipReason::Truncated);
    }
    let doc = match Document::load_mem(bytes) {
        Ok(doc) => doc,
        Err(lopdf::Error::InvalidPassword | lopdf::Error::Decryption(_)) => {
            return Err(SkipReason::Encrypted)
        }
        Err(e) => return Err(corrupt(e)),
    };
    if doc.is_encrypted() {
        return Err(SkipReason::Encrypted);
    }
    let page_ids = doc.get_pages();
    if page_ids.is_empty() {
        return Err(SkipReason::Corrupt {
            detail: "no pages".into(),
        });
    }
    let mut pages = Vec::with_capacity(page_ids.len());
    for id in page_ids.into_values() {
        pages.push(page_text(&doc, id).map_err(corrupt)?);
    }
    let pages = tidy(pages);
    if pages.iter().all(|p| p.trim().is_empty()) {
        return Err(SkipReason::NoTextLayer);
    }
    Ok(pages)
}

fn corrupt(e: lopdf::Error) -> SkipReason {
    SkipReason::Corrupt {
        detail: e.to_string(),
    }
}

/// The raw lines of one page's text operators.
fn page_text(doc: &Document, id: lopdf::ObjectId) -> Result<String, lopdf::Error> {
    let fonts = doc.get_page_fonts(id).unwrap_or_default();
    let encodings: BTreeMap<Vec<u8>, Encoding> = fonts
        .into_iter()
        .filter_map(|(name, font)| {
            let encoding = font.get_font_encoding_with_limit(doc, MAX_PAGE_CONTENT);
            encoding.ok().map(|e| (name, e))
        })
        .collect();
    let data = doc.get_page_content_with_limit(id, MAX_PAGE_CONTENT)?;
    let content = Content::decode(&data)?;
    let mut out = Text::default();
    let mut encoding = None;
    for op in &content.operations {
        let operands = &op.operands;
        match op.operator.as_str() {
            "Tf" => {
                encoding = operands
                    .first()
                    .and_then(|o| o.as_name().ok())
                    .and_then(|name| encodings.get(name));
            }
            "BT" => out.line_y = None,
            "T*" => out.newline(),
            "Td" | "TD" => {
                let ty = number(operands.get(1));
                if ty.abs() > 0.01 {
                    out.newline();
                } else if number(operands.first()) > 0.0 {
                    out.space();
                }
            }
            "Tm" => {
                let y = number(operands.get(5));
                match out.line_y {
                    Some(last) if (last - y).abs() <= 0.5 => out.space(),
                    Some(_) => out.newline(),
                    None => out.space(),
                }
                out.line_y = Some(y);
            }
            "Tj" | "'" | "\"" => {
                if op.operator != "Tj" {
                    out.newline();
                }
                if let (Some(enc), Some(Object::String(bytes, _))) = (encoding, operands.last()) {
                    out.show(enc, bytes);
                }
            }
            "TJ" => {
                let (Some(enc), Some(Object::Array(items))) = (encoding, operands.first()) else {
                    continue;
                };
                for item in items {
                    match item {
                        Object::String(bytes, _) => out.show(enc, bytes),
                        other => {
                            if number(Some(other)) < WORD_GAP {
                                out.space();
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out.text)
}

/// Text being collected from a page, with the baseline of the current line.
#[derive(Default)]
struct Text {
    text: String,
    line_y: Option<f32>,
}

impl Text {
    fn show(&mut self, encoding: &Encoding, bytes: &[u8]) {
        // A glyph lopdf cannot map is left out, not the page.
        let _ = encoding.write_to_string(bytes, &mut self.text);
    }

    fn space(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with([' ', '\n']) {
            self.text.push(' ');
        }
    }

    fn newline(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
    }
}

fn number(object: Option<&Object>) -> f32 {
    match object {
        Some(Object::Integer(i)) => *i as f32,
        Some(Object::Real(r)) => *r,
        _ => 0.0,
    }
}

/// Each page's lines trimmed, running headers and footers and page numbers removed, and words
/// hyphenated across a line end joined again.
pub(crate) fn tidy(pages: Vec<String>) -> Vec<String> {
    let pages: Vec<Vec<String>> = pages
        .iter()
        .map(|p| {
            let lines: Vec<String> = p
                .lines()
                .map(|l| not_a_heading(l.split_whitespace().collect::<Vec<_>>().join(" ")))
                .filter(|l| !l.is_empty())
                .collect();
            let last = lines.len().saturating_sub(1);
            lines
                .into_iter()
                .enumerate()
                .filter(|(i, line)| {
                    let near_edge = *i < EDGE_LINES || *i + EDGE_LINES > last;
                    !(near_edge && is_page_number(line))
                })
                .map(|(_, line)| line)
                .collect()
        })
        .collect();
    let running = running_lines(&pages);
    pages
        .into_iter()
        .map(|lines| {
            let last = lines.len().saturating_sub(1);
            let kept: Vec<&str> = lines
                .iter()
                .enumerate()
                .filter(|(i, line)| !((*i == 0 || *i == last) && running.contains(&shape(line))))
                .map(|(_, line)| line.as_str())
                .collect();
            dehyphenate(&kept)
        })
        .collect()
}

/// A PDF has no heading markup, so a line that reads like a Markdown heading ("# save this as
/// app.py" from a code listing) loses the space after its `#`s: the passage splitter must not
/// take it for a section title.
fn not_a_heading(line: String) -> String {
    let hashes = line.chars().take_while(|&c| c == '#').count();
    if hashes == 0 || !line[hashes..].starts_with(' ') {
        return line;
    }
    format!("{}{}", &line[..hashes], line[hashes..].trim_start())
}

/// Lines this close to a page's top or bottom may be page numbers.
const EDGE_LINES: usize = 2;

/// A line with its digits blanked, so "Guide — page 3" and "Guide — page 4" compare equal.
fn shape(line: &str) -> String {
    line.chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect()
}

/// First or last lines (by [`shape`]) of at least half the pages (and of three or more):
/// running headers and footers.
fn running_lines(pages: &[Vec<String>]) -> std::collections::HashSet<String> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for lines in pages {
        let mut seen = std::collections::HashSet::new();
        for line in lines.first().into_iter().chain(lines.last()) {
            if seen.insert(shape(line)) {
                *counts.entry(shape(line)).or_default() += 1;
            }
        }
    }
    let needed = (pages.len().div_ceil(2)).max(3);
    counts
        .into_iter()
        .filter(|(_, n)| *n >= needed)
        .map(|(line, _)| line)
        .collect()
}

/// "7", "- 7 -", "Page 7", "page 7 of 9", "vii".
fn is_page_number(line: &str) -> bool {
    let lower = line.to_lowercase();
    let core = lower
        .trim_matches(|c: char| c == '-' || c == '–' || c == '—' || c.is_whitespace())
        .trim_start_matches("page")
        .trim();
    let core = core.split(" of ").next().unwrap_or(core).trim();
    !core.is_empty()
        && (core.chars().all(|c| c.is_ascii_digit())
            || (core.len() <= 6 && core.chars().all(|c| "ivxlc".contains(c))))
}

/// Joins the lines, removing a hyphen that splits a word across a line end ("exam-" + "ple").
fn dehyphenate(lines: &[&str]) -> String {
    let mut out = String::new();
    for line in lines {
        let joins = out
            .strip_suffix('-')
            .and_then(|s| s.chars().last())
            .is_some_and(char::is_alphabetic)
            && line.chars().next().is_some_and(char::is_lowercase);
        if joins {
            out.pop();
        } else if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_numbers_running_lines_and_hyphens_are_tidied() {
        let pages = (1..=4)
            .map(|n| {
                format!(
                    "Field Guide\nBody {n} text with an exam-\nple of a word.\nFooter {n}\n- {n} -"
                )
            })
            .collect();
        let tidied = tidy(pages);
        assert_eq!(tidied[0], "Body 1 text with an example of a word.");
        assert_eq!(tidied[3], "Body 4 text with an example of a word.");
        // A hyphen before a capital or a number is a real one.
        assert_eq!(
            dehyphenate(&["well-", "Known", "x-", "2"]),
            "well-\nKnown\nx-\n2"
        );
        assert!(is_page_number("Page 3 of 10") && is_page_number("xii"));
        assert_eq!(
            tidy(vec!["# save this\n#x\n## two".into()]),
            ["#save this\n#x\n##two"]
        );
        assert!(!is_page_number("Chapter 3") && !is_page_number("vivid"));
    }

    #[test]
    fn malformed_pdfs_are_typed_skips() {
        assert_eq!(pages(b"%PDF-1.4\nnot really"), Err(SkipReason::Truncated));
        assert!(matches!(
            pages(b"%PDF-1.4\ngarbage\n%%EOF\n"),
            Err(SkipReason::Corrupt { .. })
        ));
        assert!(matches!(
            pages(b"hello %%EOF"),
            Err(SkipReason::Corrupt { .. })
        ));
    }
}
