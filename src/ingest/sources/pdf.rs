//! PDF documents: the text layer of each page, read with `lopdf`, in content-stream order
//! (the order typesetters such as pdfTeX and groff write a page in reading order).
//!
//! `lopdf` parses the file, decrypts what needs no password, and decodes each font's encoding;
//! this file only walks the text operators to place line breaks and word spaces, then tidies
//! the page ([`tidy`]): hyphenation at line ends joined, and running headers, footers and page
//! numbers removed. Page contents are decompressed under a bound, so a small file cannot
//! inflate without limit.
use crate::knowledge::SkipReason;
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

/// A font of the page: its encoding and glyph widths.
struct Font<'a> {
    encoding: Encoding<'a>,
    /// Widths in thousandths of an em from `first_char`; empty for composite fonts.
    widths: Vec<f32>,
    first_char: i64,
    /// Bytes per character code (2 for composite `Type0` fonts).
    code_bytes: usize,
}

impl Font<'_> {
    /// The advance of `bytes` in thousandths of an em (word and character spacing apart).
    fn advance(&self, bytes: &[u8]) -> (f32, usize, usize) {
        let chars = bytes.len() / self.code_bytes.max(1);
        let spaces = bytes.iter().filter(|&&b| b == b' ').count();
        if self.code_bytes != 1 || self.widths.is_empty() {
            return (chars as f32 * DEFAULT_WIDTH, chars, spaces);
        }
        let width = bytes
            .iter()
            .map(|&b| {
                let at = i64::from(b) - self.first_char;
                usize::try_from(at)
                    .ok()
                    .and_then(|at| self.widths.get(at))
                    .copied()
                    .unwrap_or(DEFAULT_WIDTH)
            })
            .sum();
        (width, chars, spaces)
    }
}

/// The width of a glyph whose font gives none.
const DEFAULT_WIDTH: f32 = 500.0;
/// A horizontal move this much further than the text shown (in ems) is a word space.
const GAP_EMS: f32 = 0.15;

fn fonts<'a>(doc: &'a Document, id: lopdf::ObjectId) -> BTreeMap<Vec<u8>, Font<'a>> {
    let resolve = |o: &'a Object| match o {
        Object::Reference(id) => doc.get_object(*id).ok(),
        other => Some(other),
    };
    doc.get_page_fonts(id)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(name, font)| {
            let encoding = font
                .get_font_encoding_with_limit(doc, MAX_PAGE_CONTENT)
                .ok()?;
            let composite = font
                .get(b"Subtype")
                .ok()
                .and_then(|s| s.as_name().ok())
                .is_some_and(|s| s == b"Type0");
            let widths = font
                .get(b"Widths")
                .ok()
                .and_then(resolve)
                .and_then(|w| w.as_array().ok())
                .map(|w| w.iter().map(|n| number(resolve(n))).collect())
                .unwrap_or_default();
            let first_char = font
                .get(b"FirstChar")
                .ok()
                .and_then(|n| n.as_i64().ok())
                .unwrap_or(0);
            let code_bytes = if composite { 2 } else { 1 };
            Some((
                name,
                Font {
                    encoding,
                    widths,
                    first_char,
                    code_bytes,
                },
            ))
        })
        .collect()
}

/// The raw lines of one page's text operators.
fn page_text(doc: &Document, id: lopdf::ObjectId) -> Result<String, lopdf::Error> {
    let fonts = fonts(doc, id);
    let data = doc.get_page_content_with_limit(id, MAX_PAGE_CONTENT)?;
    let content = Content::decode(&data)?;
    let mut out = Text::default();
    let mut font: Option<&Font> = None;
    for op in &content.operations {
        let operands = &op.operands;
        match op.operator.as_str() {
            "Tf" => {
                font = operands
                    .first()
                    .and_then(|o| o.as_name().ok())
                    .and_then(|name| fonts.get(name));
                out.size = number(operands.get(1)).abs().max(0.01);
            }
            "Tw" => out.word_spacing = number(operands.first()),
            "Tc" => out.char_spacing = number(operands.first()),
            "BT" => {
                out.line_y = None;
                (out.line_x, out.pen) = (0.0, 0.0);
            }
            "T*" => out.newline(),
            "Td" | "TD" => {
                let (tx, ty) = (number(operands.first()), number(operands.get(1)));
                out.line_x += tx;
                if ty.abs() > 0.01 {
                    out.newline();
                } else {
                    out.move_to(out.line_x);
                }
                out.pen = out.line_x;
            }
            "Tm" => {
                let (x, y) = (number(operands.get(4)), number(operands.get(5)));
                match out.line_y {
                    Some(last) if (last - y).abs() <= 0.5 => out.move_to(x),
                    Some(_) => out.newline(),
                    None => out.space(),
                }
                out.line_y = Some(y);
                (out.line_x, out.pen) = (x, x);
            }
            "Tj" | "'" | "\"" => {
                if op.operator != "Tj" {
                    out.newline();
                    out.pen = out.line_x;
                }
                if let (Some(font), Some(Object::String(bytes, _))) = (font, operands.last()) {
                    out.show(font, bytes);
                }
            }
            "TJ" => {
                let (Some(font), Some(Object::Array(items))) = (font, operands.first()) else {
                    continue;
                };
                for item in items {
                    match item {
                        Object::String(bytes, _) => out.show(font, bytes),
                        other => {
                            let adjust = number(Some(other));
                            out.pen -= adjust / 1000.0 * out.size;
                            if adjust < WORD_GAP {
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

/// Text being collected from a page, with where the pen is on the current line (text space,
/// for the Tm-identity pages typesetters write; enough to tell a word gap from a kern).
#[derive(Default)]
struct Text {
    text: String,
    line_y: Option<f32>,
    line_x: f32,
    pen: f32,
    size: f32,
    word_spacing: f32,
    char_spacing: f32,
}

impl Text {
    fn show(&mut self, font: &Font, bytes: &[u8]) {
        // A glyph lopdf cannot map is left out, not the page.
        let _ = font.encoding.write_to_string(bytes, &mut self.text);
        let (width, chars, spaces) = font.advance(bytes);
        self.pen += width / 1000.0 * self.size
            + chars as f32 * self.char_spacing
            + spaces as f32 * self.word_spacing;
    }

    /// The pen moves to `x` on the same line: a word space when it skips more than a kern.
    fn move_to(&mut self, x: f32) {
        if x - self.pen > GAP_EMS * self.size.max(1.0) {
            self.space();
        }
        self.pen = x;
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
    // Untrusted numbers: a NaN or infinity would poison the pen position.
    let n = raw_number(object);
    if n.is_finite() {
        n
    } else {
        0.0
    }
}

fn raw_number(object: Option<&Object>) -> f32 {
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
