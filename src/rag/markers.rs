//! Citation markers in an answer's text: set at a sentence's end, renumbered to the
//! citations, taken out with the spaces they leave (what [`super::attribution`] writes).

use crate::knowledge::Document;
use crate::llm::citation_markers;
use std::collections::HashMap;

/// `text` without its citation markers, and without the spaces they leave before punctuation
/// ("the `du` command [1]." -> "the `du` command.").
pub(super) fn without_markers(text: &str) -> String {
    with_markers(&crate::llm::strip_markers(text), &[])
}

/// `items` without repeats, in order.
pub(super) fn dedup<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// `text` with each valid marker's numbers mapped to their citation numbers (invalid ones
/// taken out).
pub(super) fn renumber(
    text: &str,
    documents: &[Document],
    number: &HashMap<&str, usize>,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for marker in citation_markers(text) {
        out.push_str(&text[from..marker.span.start]);
        from = marker.span.end;
        let mapped: Vec<String> = dedup(
            marker
                .numbers
                .iter()
                .filter_map(|n| documents.get((*n as usize).checked_sub(1)?))
                .filter_map(|doc| number.get(doc.url.as_str()).copied()),
        )
        .into_iter()
        .map(|n| n.to_string())
        .collect();
        if mapped.is_empty() {
            trim_end_in_place(&mut out);
        } else {
            out.push_str(&format!("[{}]", mapped.join(", ")));
        }
    }
    out.push_str(&text[from..]);
    out
}

fn trim_end_in_place(text: &mut String) {
    let kept = text.trim_end().len();
    text.truncate(kept);
}

/// `body` (markers taken out) with `numbers` cited at its end, before its closing punctuation:
/// `Flate2 compresses gzip [1].`
pub(super) fn with_markers(body: &str, numbers: &[usize]) -> String {
    let trimmed = body.trim_end();
    let tail = &body[trimmed.len()..];
    // Tidy the spaces a taken-out marker left before punctuation ("gzip ." -> "gzip.").
    let mut sentence = String::with_capacity(trimmed.len());
    for (i, c) in trimmed.char_indices() {
        if matches!(c, '.' | ',' | ';' | ':' | '!' | '?')
            && sentence.ends_with(' ')
            && trimmed[..i]
                .trim_end()
                .ends_with(|p: char| p.is_alphanumeric() || p == '`')
        {
            trim_end_in_place(&mut sentence);
        }
        sentence.push(c);
    }
    if numbers.is_empty() {
        return format!("{sentence}{tail}");
    }
    let marks: Vec<String> = numbers.iter().map(|n| n.to_string()).collect();
    let closing = sentence
        .trim_end_matches(['.', '!', '?', ':', ';', '"', '\'', ')', '”', '’'])
        .len();
    let (words, punctuation) = sentence.split_at(closing);
    format!(
        "{} [{}]{punctuation}{tail}",
        words.trim_end(),
        marks.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_taken_out_with_the_spaces_they_leave_before_punctuation() {
        assert_eq!(
            without_markers("Use the `du` command [1]. It sums sizes [2, 3]; see [4]!\n"),
            "Use the `du` command. It sums sizes; see!\n"
        );
        assert_eq!(
            without_markers("Index `v[1]` stays."),
            "Index `v[1]` stays."
        );
    }
}
