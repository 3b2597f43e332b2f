//! An answer cut into its sentences and code blocks, each with its byte span (so attribution
//! can rewrite the citations of one sentence and leave the rest of the text as written): a
//! sentence ends at `.`, `!` or `?` before a word that does not start in lowercase (an
//! initial or `e.g.` does not end one), and the citation markers after its end are its own;
//! a blank line, a heading or a list item starts a new one; a fenced code block is one unit.

use crate::llm::{citation_markers, is_abbreviation};
use std::ops::Range;

/// One sentence (or code block) of an answer.
pub(super) struct Unit {
    /// Its bytes in the answer, its trailing citation markers included.
    pub(super) span: Range<usize>,
    /// A fenced code block.
    pub(super) code: bool,
}

/// The sentences and code blocks of `text`, in order, with their trailing citation markers.
pub(super) fn units(text: &str) -> Vec<Unit> {
    let mut out = Vec::new();
    let mut start = None::<usize>;
    let mut in_code = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let line_start = offset;
        offset += line.len();
        let content = line.trim_end_matches(['\n', '\r']);
        let trimmed = content.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            if in_code {
                let begun = start.take().unwrap_or(line_start);
                out.push(Unit {
                    span: begun..line_start + content.len(),
                    code: true,
                });
                in_code = false;
            } else {
                close(&mut out, text, &mut start, line_start);
                start = Some(line_start + (content.len() - trimmed.len()));
                in_code = true;
            }
            continue;
        }
        if in_code {
            continue;
        }
        let breaks = trimmed.is_empty() || trimmed.starts_with('#') || is_list_item(trimmed);
        if breaks {
            close(&mut out, text, &mut start, line_start);
        }
        if trimmed.is_empty() {
            continue;
        }
        let begin = line_start + (content.len() - trimmed.len());
        if start.is_none() {
            start = Some(begin);
        }
        split_sentences(&mut out, text, &mut start, line_start + content.len());
        if trimmed.starts_with('#') {
            close(&mut out, text, &mut start, line_start + content.len());
        }
    }
    if in_code {
        if let Some(begun) = start.take() {
            out.push(Unit {
                span: begun..text.trim_end().len().max(begun),
                code: true,
            });
        }
    }
    close(&mut out, text, &mut start, text.len());
    out
}

/// Ends the open unit at `end` (trailing spaces left out).
fn close(out: &mut Vec<Unit>, text: &str, start: &mut Option<usize>, end: usize) {
    if let Some(begun) = start.take() {
        let end = begun + text[begun..end].trim_end().len();
        if end > begun {
            out.push(Unit {
                span: begun..end,
                code: false,
            });
        }
    }
}

/// Cuts the open unit into sentences up to `end`: a sentence ends at `.`, `!` or `?` (closing
/// quotes and brackets and any citation markers after it included) before a space and a word
/// that does not start in lowercase, or at a citation marker before such a word.
fn split_sentences(out: &mut Vec<Unit>, text: &str, start: &mut Option<usize>, end: usize) {
    let Some(mut begun) = *start else { return };
    let markers: Vec<Range<usize>> = citation_markers(&text[begun..end])
        .into_iter()
        .map(|m| m.span.start + begun..m.span.end + begun)
        .collect();
    let bytes = text.as_bytes();
    let mut i = begun;
    while i < end {
        let c = bytes[i];
        let marker = markers.iter().find(|m| m.start == i);
        let mut stop = match (c, marker) {
            (_, Some(m)) => Some(m.end),
            (b'.' | b'!' | b'?', _) if !(c == b'.' && is_abbreviation(&text[begun..i])) => {
                let mut k = i + 1;
                while k < end && matches!(bytes[k], b'"' | b'\'' | b')' | b']') {
                    k += 1;
                }
                Some(k)
            }
            _ => None,
        };
        if let Some(mut k) = stop.take() {
            // Markers after the end belong to the sentence they follow.
            loop {
                let spaces = text[k..end].len() - text[k..end].trim_start_matches(' ').len();
                match markers.iter().find(|m| m.start == k + spaces) {
                    Some(m) => k = m.end,
                    None => break,
                }
            }
            // A closing period after the markers too ("... [1].").
            while k < end && matches!(bytes[k], b'.' | b'!' | b'?') {
                k += 1;
            }
            let rest = &text[k..end];
            let next = rest.trim_start().chars().next();
            let boundary = rest.starts_with(char::is_whitespace)
                && next.is_some_and(|n| !n.is_lowercase())
                || rest.is_empty();
            if boundary && k > begun {
                out.push(Unit {
                    span: begun..k,
                    code: false,
                });
                begun = k + (rest.len() - rest.trim_start().len());
                *start = (begun < end).then_some(begun);
                i = begun;
                continue;
            }
            i = k.max(i + 1);
            continue;
        }
        i += 1;
    }
}

/// True for a Markdown list item (`- x`, `* x`, `1. x`).
fn is_list_item(line: &str) -> bool {
    if ["- ", "* ", "+ "].iter().any(|m| line.starts_with(m)) {
        return true;
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && line[digits..].starts_with(". ")
}
