//! reStructuredText (`.rst`): turned into Markdown-style text, so the Markdown cleaner and the
//! heading chunking apply as to any Markdown document.
//!
//! - Section titles (underlined, optionally overlined, with any punctuation) become `#`
//!   headings, levels in the order the adornment styles first appear, as docutils does.
//! - Directives keep their text (`.. note::`, `.. function:: f(x)` and its description), and
//!   code and literal blocks (`::`, `.. code-block::`) stay as fenced code; directives that hold
//!   no prose (`image`, `toctree`, `include`, `raw`, ...), comments and link targets go.
//! - Roles (`:func:`~a.b``), references (`` `text <url>`_ ``, `` `text`_ ``) and
//!   substitutions (`|name|`) are replaced by their text, the way Markdown links are.
use std::collections::HashMap;

/// Directives whose content is not prose: dropped with their block.
const DROPPED: &[&str] = &[
    "image",
    "figure",
    "toctree",
    "include",
    "literalinclude",
    "raw",
    "meta",
    "contents",
    "index",
    "highlight",
    "sectnum",
    "tabularcolumns",
    "currentmodule",
    "default-role",
    "role",
    "testsetup",
    "testcleanup",
];
/// Directives whose content is code, kept as a fenced block.
const CODE: &[&str] = &[
    "code",
    "code-block",
    "sourcecode",
    "doctest",
    "testcode",
    "testoutput",
    "parsed-literal",
];

/// The text of a reStructuredText document, with `#` headings and fenced code.
pub(crate) fn to_markdown(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end()).collect();
    let substitutions = substitutions(&lines);
    let mut styles: Vec<(char, bool)> = Vec::new();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        // Overlined title: adornment, title, same adornment.
        if let (Some(c), Some(title), Some(under)) =
            (adornment(line), lines.get(i + 1), lines.get(i + 2))
        {
            if adornment(under) == Some(c) && !title.trim().is_empty() && adornment(title).is_none()
            {
                out.push(heading(
                    &mut styles,
                    (c, true),
                    title.trim(),
                    &substitutions,
                ));
                i += 3;
                continue;
            }
        }
        // Underlined title: text, then an adornment at least as long.
        if let Some(under) = lines.get(i + 1) {
            if let Some(c) = adornment(under) {
                let starts_block = i == 0 || lines[i - 1].trim().is_empty();
                let fits = under.chars().count() >= line.trim().chars().count();
                if starts_block && fits && !line.trim().is_empty() && !line.starts_with(' ') {
                    out.push(heading(
                        &mut styles,
                        (c, false),
                        line.trim(),
                        &substitutions,
                    ));
                    i += 2;
                    continue;
                }
            }
        }
        // A transition (a lone adornment line) separates; it carries no text.
        if adornment(line).is_some() {
            i += 1;
            continue;
        }
        if let Some(rest) = line.trim_start().strip_prefix(".. ") {
            let indent = indent_of(line);
            let end = block_end(&lines, i + 1, indent);
            let body = dedent(&lines[i + 1..end]);
            i = end;
            match explicit(rest) {
                Explicit::Dropped => {}
                Explicit::Code => out.push(fence(&body)),
                Explicit::Prose(head) => {
                    let head = inline(head, &substitutions);
                    let head = match version_note(rest) {
                        Some(note) => format!("{note} {head}:"),
                        None => head,
                    };
                    if !head.is_empty() {
                        out.push(head);
                    }
                    if !body.is_empty() {
                        out.push(to_markdown(&body));
                    }
                }
            }
            continue;
        }
        // A paragraph ending in `::` introduces a literal block.
        if line.ends_with("::") {
            let text = line.trim_end_matches("::").trim_end();
            let prose = if text.is_empty() {
                String::new()
            } else {
                format!("{}:", inline(text, &substitutions))
            };
            let indent = indent_of(line);
            let mut start = i + 1;
            while start < lines.len() && lines[start].trim().is_empty() {
                start += 1;
            }
            let end = block_end(&lines, start, indent);
            if !prose.is_empty() {
                out.push(prose);
            }
            if end > start {
                out.push(fence(&dedent(&lines[start..end])));
                i = end;
            } else {
                i += 1;
            }
            continue;
        }
        out.push(inline(line, &substitutions));
        i += 1;
    }
    let joined = out.join("\n");
    // Collapse the blank lines left by removed blocks.
    let mut text = String::with_capacity(joined.len());
    let mut blank = 0;
    for line in joined.lines() {
        blank = if line.trim().is_empty() { blank + 1 } else { 0 };
        if blank < 2 {
            text.push_str(line);
            text.push('\n');
        }
    }
    text.trim().to_owned()
}

/// A line made of one punctuation character repeated (at least three times).
fn adornment(line: &str) -> Option<char> {
    let mut chars = line.chars();
    let c = chars.next()?;
    (c.is_ascii_punctuation() && line.len() >= 3 && chars.all(|x| x == c) && line.trim() == line)
        .then_some(c)
}

fn heading(
    styles: &mut Vec<(char, bool)>,
    style: (char, bool),
    title: &str,
    subs: &HashMap<String, String>,
) -> String {
    let level = match styles.iter().position(|s| *s == style) {
        Some(at) => at + 1,
        None => {
            styles.push(style);
            styles.len()
        }
    };
    format!("\n{} {}\n", "#".repeat(level.min(6)), inline(title, subs))
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The end of the block indented deeper than `indent` that starts at `from` (blank lines
/// inside it included, trailing ones not).
fn block_end(lines: &[&str], from: usize, indent: usize) -> usize {
    let mut end = from;
    let mut last_text = from;
    while end < lines.len() {
        let line = lines[end];
        if !line.trim().is_empty() {
            if indent_of(line) <= indent {
                break;
            }
            last_text = end + 1;
        }
        end += 1;
    }
    last_text.max(from)
}

fn dedent(lines: &[&str]) -> String {
    let least = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| indent_of(l))
        .min()
        .unwrap_or(0);
    let kept: Vec<&str> = lines.iter().map(|l| l.get(least..).unwrap_or("")).collect();
    kept.join("\n").trim_matches('\n').to_owned()
}

fn fence(code: &str) -> String {
    format!("\n```\n{code}\n```\n")
}

/// What an explicit markup block (`.. ` line) is.
enum Explicit<'a> {
    Dropped,
    Code,
    /// Prose, with the directive's arguments as its first line.
    Prose(&'a str),
}

fn explicit(rest: &str) -> Explicit<'_> {
    // Link targets (`.. _name: url`), substitution definitions (read up front).
    if rest.starts_with('_') || rest.starts_with('|') {
        return Explicit::Dropped;
    }
    // Footnotes and citations keep their text.
    if rest.starts_with('[') {
        return Explicit::Prose(rest);
    }
    let Some((name, args)) = rest.split_once("::") else {
        // A comment.
        return Explicit::Dropped;
    };
    let name = name.trim();
    let name = name.rsplit(':').next().unwrap_or(name);
    if name.is_empty() || name.contains(' ') {
        return Explicit::Dropped;
    }
    if DROPPED.contains(&name) {
        Explicit::Dropped
    } else if CODE.contains(&name) {
        Explicit::Code
    } else {
        Explicit::Prose(args.trim())
    }
}

/// "New in version" for `versionadded` (and the like), as Sphinx renders them.
fn version_note(rest: &str) -> Option<&'static str> {
    let name = rest.split("::").next()?.trim();
    match name {
        "versionadded" => Some("New in version"),
        "versionchanged" => Some("Changed in version"),
        "deprecated" => Some("Deprecated since version"),
        _ => None,
    }
}

/// `.. |name| replace:: text` definitions (an image substitution stands for nothing).
fn substitutions(lines: &[&str]) -> HashMap<String, String> {
    let mut subs = HashMap::new();
    for line in lines {
        let Some(rest) = line.trim_start().strip_prefix(".. |") else {
            continue;
        };
        let Some((name, def)) = rest.split_once('|') else {
            continue;
        };
        let value = match def.trim().split_once("::") {
            Some(("replace", text)) => text.trim().to_owned(),
            Some(("unicode", text)) => text.trim().to_owned(),
            _ => String::new(),
        };
        subs.insert(name.to_owned(), value);
    }
    subs
}

/// Inline markup replaced by its text: roles, references, substitutions, ``literals``.
fn inline(line: &str, subs: &HashMap<String, String>) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(['`', ':', '|']) {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        if let Some(after) = from.strip_prefix("``") {
            if let Some(end) = after.find("``") {
                out.push('`');
                out.push_str(&after[..end]);
                out.push('`');
                rest = &after[end + 2..];
                continue;
            }
        }
        if let Some((text, after)) = role(from) {
            out.push_str(&text);
            rest = after;
            continue;
        }
        if let Some(after) = from.strip_prefix('`') {
            if let Some(end) = after.find('`') {
                out.push_str(&reference_text(&after[..end]));
                rest = after[end + 1..].trim_start_matches('_');
                continue;
            }
        }
        if let Some(after) = from.strip_prefix('|') {
            if let Some(end) = after.find('|') {
                if let Some(value) = subs.get(&after[..end]) {
                    out.push_str(value);
                    rest = after[end + 1..].trim_start_matches('_');
                    continue;
                }
            }
        }
        let c = from.chars().next().unwrap_or(' ');
        out.push(c);
        rest = &from[c.len_utf8()..];
    }
    out.push_str(rest);
    out
}

/// `:role:`text`` at the start of `from`: the text it shows, and what follows.
fn role(from: &str) -> Option<(String, &str)> {
    let after = from.strip_prefix(':')?;
    let name_end = after.find(":`")?;
    let name = &after[..name_end];
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.' | '+'));
    if !valid {
        return None;
    }
    let body = &after[name_end + 2..];
    let end = body.find('`')?;
    let target = &body[..end];
    let text = reference_text(target);
    // `~a.b.c` shows only the last part.
    let text = match text.strip_prefix('~') {
        Some(path) => path.rsplit('.').next().unwrap_or(path).to_owned(),
        None => text.trim_start_matches('!').to_owned(),
    };
    Some((text, &body[end + 1..]))
}

/// `Title <target>` → `Title`; anything else as it is.
fn reference_text(inner: &str) -> String {
    match inner.rsplit_once(" <") {
        Some((text, target)) if target.ends_with('>') => text.trim().to_owned(),
        _ => inner.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_directives_roles_and_literals_become_markdown() {
        let rst = "\
=====
Guide
=====

.. _intro:

Intro
-----

Use :func:`~pkg.mod.run` and :ref:`the setup <setup>`, see `Docs <https://x.y/>`_ and |name|.

.. |name| replace:: Durian Kit

.. note::
   Keep it dry.

.. image:: pic.png
   :alt: a picture

Example::

    run(1)

.. code-block:: python

   print(2)

.. function:: spawn(cmd)

   Starts ``cmd``.

Details
~~~~~~~

.. a comment
   on two lines

Text ``x`` here.
";
        assert_eq!(
            to_markdown(rst),
            "\
# Guide

## Intro

Use run and the setup, see Docs and Durian Kit.

Keep it dry.

Example:

```
run(1)
```

```
print(2)
```

spawn(cmd)
Starts `cmd`.

### Details

Text `x` here."
        );
    }

    #[test]
    fn a_short_underline_or_an_indented_line_is_not_a_title() {
        assert_eq!(to_markdown("Long title\n---\n"), "Long title");
        assert_eq!(
            to_markdown("text\n\n  quoted\n  ======\n").lines().count(),
            4
        );
    }
}
