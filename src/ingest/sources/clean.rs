//! Cleaning Markdown and plain text before it is split into passages.
//!
//! Real documents (READMEs above all) carry much that a reader skips and a search index
//! should too: badges, images, link targets, bare URLs, HTML tags and comments, table rules.
//! Left in, their tokens (`img`, `shields`, `svg`, `github`, `com`, ...) match questions about
//! nothing and bury the prose. What a reader does read stays: link text, code (fenced or
//! inline, so identifiers stay searchable), the text inside HTML elements, headings.
//!
//! Underlined headings (`Title` over `====` or `----`, as Markdown's setext headings and
//! reStructuredText write them) become `#` headings, so heading chunking sees them too.
//!
//! Line structure is kept: a line that held only markup becomes blank (a paragraph break).

/// HTML elements whose tags are dropped (their text kept). Anything else between `<` and `>`
/// (`Vec<T>`, `<dyn Trait>`, `<file>`) is text.
#[rustfmt::skip]
const HTML_TAGS: &[&str] = &[
    "a", "abbr", "b", "blockquote", "br", "center", "code", "dd", "del", "details", "div", "dl",
    "dt", "em", "figcaption", "figure", "font", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i",
    "img", "ins", "kbd", "li", "ol", "p", "picture", "pre", "samp", "section", "small", "source",
    "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "th", "thead", "tr", "tt",
    "u", "ul", "video",
];

/// The cleaned text of a Markdown or plain-text document.
pub(crate) fn clean(text: &str) -> String {
    let text = strip_comments(text);
    let mut lines: Vec<String> = Vec::new();
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(marker) = fence {
            if trimmed.starts_with(marker) {
                fence = None;
            }
            lines.push(line.trim_end().to_owned());
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
            lines.push(line.trim_end().to_owned());
            continue;
        }
        if is_table_rule(trimmed) {
            continue; // the table's rows stay one paragraph
        }
        if is_link_definition(trimmed) {
            lines.push(String::new());
            continue;
        }
        lines.push(clean_line(line).trim_end().to_owned());
    }
    let lines = underlined_headings(lines);
    let mut text = collapse_blank_lines(&lines);
    while text.ends_with("\n\n") {
        text.pop();
    }
    text
}

/// Removes `<!-- ... -->` comments, which may span lines.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        match rest[start..].find("-->") {
            Some(end) => {
                // Keep the comment's line breaks so line structure stays.
                let comment = &rest[start..start + end];
                out.extend(comment.chars().filter(|&c| c == '\n'));
                rest = &rest[start + end + 3..];
            }
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// `[label]: https://...`: a reference link's target, nothing to read.
fn is_link_definition(line: &str) -> bool {
    let Some(rest) = line.strip_prefix('[') else {
        return false;
    };
    match rest.find("]:") {
        Some(end) => !rest[..end].contains('['),
        None => false,
    }
}

/// `|---|:--:|`: the rule under a table header.
fn is_table_rule(line: &str) -> bool {
    let line = line.trim();
    line.contains('-')
        && line.contains('|')
        && line.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
}

/// One line outside code fences: images and link targets, bare URLs, HTML tags and entities.
fn clean_line(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '`' => {
                // Inline code is kept verbatim, up to the closing run of backticks.
                let run = chars[i..].iter().take_while(|&&b| b == '`').count();
                let close = find_run(&chars, i + run, run);
                let end = close.map_or(i + run, |close| close + run);
                out.extend(&chars[i..end]);
                i = end;
            }
            '!' if chars.get(i + 1) == Some(&'[') => {
                // An image, linked or by reference (`![alt]` alone too): alt text and target go.
                match (link(&chars, i + 1), matching(&chars, i + 1, '[', ']')) {
                    (Some((_, end)), _) => i = end,
                    (None, Some(close)) => i = close + 1,
                    (None, None) => {
                        out.push(c);
                        i += 1;
                    }
                }
            }
            '[' => match link(&chars, i) {
                Some((text, end)) => {
                    out.push_str(&clean_line(&text));
                    i = end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            },
            '<' => match tag_end(&chars, i) {
                Some(end) => {
                    out.push(' ');
                    i = end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            },
            '&' => match entity(&chars, i) {
                Some((text, end)) => {
                    out.push_str(text);
                    i = end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            },
            'h' if starts_url(&chars, i) => {
                while i < chars.len()
                    && !chars[i].is_whitespace()
                    && !matches!(chars[i], '<' | '>' | ')' | ']' | '"')
                {
                    i += 1;
                }
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Position of the next run of exactly `run` backticks from `from`.
fn find_run(chars: &[char], from: usize, run: usize) -> Option<usize> {
    let mut i = from;
    while i < chars.len() {
        if chars[i] == '`' {
            let n = chars[i..].iter().take_while(|&&b| b == '`').count();
            if n == run {
                return Some(i);
            }
            i += n;
        } else {
            i += 1;
        }
    }
    None
}

/// A link at `open` (`[text](target)`, `[text][ref]`, `[text][]`): its text and the position
/// after it. A bare `[text]` is not a link.
fn link(chars: &[char], open: usize) -> Option<(String, usize)> {
    let close = matching(chars, open, '[', ']')?;
    let text: String = chars[open + 1..close].iter().collect();
    match chars.get(close + 1) {
        Some('(') => {
            let end = matching(chars, close + 1, '(', ')')?;
            Some((text, end + 1))
        }
        Some('[') => {
            let end = matching(chars, close + 1, '[', ']')?;
            Some((text, end + 1))
        }
        _ => None,
    }
}

/// The position of the bracket closing the one at `open`, nesting counted.
fn matching(chars: &[char], open: usize, left: char, right: char) -> Option<usize> {
    let mut depth = 0usize;
    for (i, &c) in chars.iter().enumerate().skip(open) {
        if c == left {
            depth += 1;
        } else if c == right {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// The position after an HTML tag (`<img src=..>`, `</p>`, `<br/>`) or an autolink
/// (`<https://..>`) starting at `open`; `None` when the `<` is text.
fn tag_end(chars: &[char], open: usize) -> Option<usize> {
    let close = open + chars[open..].iter().position(|&c| c == '>')?;
    let inner: String = chars[open + 1..close].iter().collect();
    if inner.starts_with("http://") || inner.starts_with("https://") {
        return Some(close + 1);
    }
    let name = inner.strip_prefix('/').unwrap_or(&inner);
    let name_len = name
        .find(|c: char| c.is_whitespace() || c == '/')
        .unwrap_or(name.len());
    let known = HTML_TAGS.contains(&name[..name_len].to_ascii_lowercase().as_str());
    // A one-letter tag must be lowercase: `<T>` and `<S>` are generics.
    let lowercase = name_len > 1 || name.starts_with(|c: char| c.is_ascii_lowercase());
    (known && lowercase).then_some(close + 1)
}

/// An HTML entity at `at`: its text (a space for the ones not listed) and the position after.
fn entity(chars: &[char], at: usize) -> Option<(&'static str, usize)> {
    const ENTITIES: &[(&str, &str)] = &[
        ("&amp;", "&"),
        ("&lt;", "<"),
        ("&gt;", ">"),
        ("&quot;", "\""),
        ("&#39;", "'"),
        ("&nbsp;", " "),
    ];
    let len = chars[at + 1..]
        .iter()
        .take(10)
        .take_while(|c| c.is_ascii_alphanumeric() || **c == '#')
        .count();
    if len == 0 || chars.get(at + 1 + len) != Some(&';') {
        return None;
    }
    let name: String = chars[at..at + len + 2].iter().collect();
    let text = ENTITIES
        .iter()
        .find(|(known, _)| *known == name)
        .map_or(" ", |(_, text)| *text);
    Some((text, at + len + 2))
}

/// Whether a bare `http://` or `https://` URL starts at `at` (not inside a word).
fn starts_url(chars: &[char], at: usize) -> bool {
    if at > 0 && chars[at - 1].is_alphanumeric() {
        return false;
    }
    let rest: String = chars[at..chars.len().min(at + 8)].iter().collect();
    rest.starts_with("http://") || rest.starts_with("https://")
}

/// A line made of one repeated underline character (`=`, `-`, `~`, `^`, `*`, `+`, `#`).
fn underline(line: &str) -> Option<char> {
    let line = line.trim_end();
    let first = line.chars().next()?;
    (matches!(first, '=' | '-' | '~' | '^' | '*' | '+' | '#' | '"')
        && line.chars().count() >= 3
        && line.chars().all(|c| c == first))
    .then_some(first)
}

/// Turns underlined (and over- and underlined) headings into `#` headings: `=` gives the
/// first level seen `#`, any other character `##`.
fn underlined_headings(lines: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    let mut in_fence = false;
    while i < lines.len() {
        let line = &lines[i];
        let trimmed = line.trim_start();
        if (trimmed.starts_with("```") || trimmed.starts_with("~~~")) && underline(line).is_none() {
            in_fence = !in_fence;
        }
        let next = lines.get(i + 1).map(String::as_str);
        let text_line = !in_fence
            && !trimmed.is_empty()
            && underline(line).is_none()
            && !trimmed.starts_with(['#', '-', '*', '+', '|', '>']);
        if let (true, Some(mark)) = (text_line, next.and_then(underline)) {
            // An overline above the title is dropped too.
            if out.last().and_then(|l| underline(l)) == Some(mark) {
                out.pop();
            }
            let level = if mark == '=' { "#" } else { "##" };
            out.push(format!("{level} {}", line.trim()));
            i += 2;
            continue;
        }
        if !in_fence && underline(line).is_some() {
            // A thematic break or a stray underline: nothing to read.
            out.push(String::new());
        } else {
            out.push(line.clone());
        }
        i += 1;
    }
    out
}

/// The lines joined, runs of blank lines collapsed to one.
fn collapse_blank_lines(lines: &[String]) -> String {
    let mut out = String::new();
    let mut blank = true;
    for line in lines {
        let is_blank = line.trim().is_empty();
        if is_blank && blank {
            continue;
        }
        blank = is_blank;
        if is_blank {
            out.push('\n');
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The start of a typical crate README: a title, a row of badges, HTML, prose with links.
    const README: &str = r#"<!-- cargo-sync-readme start -->
# serde_path_to_error

[![github]](https://github.com/dtolnay/path-to-error)&ensp;[![crates-io]](https://crates.io/crates/serde_path_to_error) [![Build Status](https://img.shields.io/github/actions/workflow/status/x/ci.yml?branch=master)](https://github.com/x/actions)

[github]: https://img.shields.io/badge/github-8da0cb?style=for-the-badge&logo=github
<p align="center"><img src="https://raw.githubusercontent.com/x/logo.png" width="200"></p>

Find out the **path** at which a [deserialization](https://serde.rs) error occurred &amp; why.
See https://docs.rs/serde_path_to_error for `Deserializer` wrappers, or <https://serde.rs>.

| Feature | Default |
|---------|:-------:|
| `std`   | yes     |

```rust
let v: Vec<T> = serde_path_to_error::deserialize(de)?; // <b>not</b> [docs](x)
```

Takes a `Box<dyn Error>` and a <b>Vec&lt;T&gt;</b>.
"#;

    #[test]
    fn badges_images_urls_and_html_go_link_text_and_code_stay() {
        let text = clean(README);
        for gone in [
            "shields",
            "img",
            "github",
            "https",
            "<p",
            "align",
            "cargo-sync",
            "---",
        ] {
            assert!(!text.contains(gone), "{gone} left in:\n{text}");
        }
        assert!(text.starts_with("# serde_path_to_error\n\n"), "{text}");
        assert!(
            text.contains(
                "Find out the **path** at which a deserialization error occurred & why.\nSee  for \
                 `Deserializer` wrappers, or  ."
            ),
            "{text}"
        );
        // Table cells and fenced code are kept verbatim, the table rule goes.
        assert!(
            text.contains("| Feature | Default |\n| `std`   | yes     |"),
            "{text}"
        );
        assert!(text.contains(
            "let v: Vec<T> = serde_path_to_error::deserialize(de)?; // <b>not</b> [docs](x)"
        ));
        assert!(
            text.contains("Takes a `Box<dyn Error>` and a  Vec<T> ."),
            "{text}"
        );
    }

    #[test]
    fn reference_links_keep_their_text_and_bare_brackets_stay() {
        assert_eq!(
            clean("Use [`serde`][serde] or [this one][] [sic].\n\n[serde]: https://serde.rs"),
            "Use `serde` or this one [sic].\n"
        );
        assert_eq!(
            clean("a<T> and <S> and <dyn Any>"),
            "a<T> and <S> and <dyn Any>\n"
        );
    }

    #[test]
    fn underlined_headings_become_hash_headings() {
        let rst = "=======\nRequests\n=======\n\nHTTP for humans.\n\nInstall\n-------\n\npip it.\n\n---\n\nEnd.";
        assert_eq!(
            clean(rst),
            "# Requests\n\nHTTP for humans.\n\n## Install\n\npip it.\n\nEnd.\n"
        );
        // A list item or code followed by a dashed line is not a heading.
        let code = "```\nx\n---\n```\n";
        assert_eq!(clean(code), code);
    }

    #[test]
    fn unclosed_markup_is_kept_as_text() {
        assert_eq!(clean("a [b](c and ![x"), "a [b](c and ![x\n");
        assert_eq!(clean("x <!-- never closed"), "x\n");
        assert_eq!(clean("if a < b && c > d"), "if a < b && c > d\n");
    }
}
