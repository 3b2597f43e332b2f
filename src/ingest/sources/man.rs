//! Manual pages rendered to plain text (`man PAGE | col -b`, as `.txt`): turned into
//! Markdown-style text, so the heading chunking names each passage by the command it documents.
//!
//! A rendered page says what it is about only in its header line (`DU(1)  User Commands  DU(1)`)
//! and its `NAME` section (`du - estimate file space usage`); read as plain text, its title was
//! the file's name and its sections ran together. Read as a page:
//!
//! - the `NAME` section's text becomes the document's title (`# du - estimate file space
//!   usage`), so every passage of the page carries the command's name and what it does;
//! - the other unindented lines (`DESCRIPTION`, `SEE ALSO`) become `##` section headings, and
//!   lines indented less than the body (`   Exit status:`) `###` subsection headings;
//! - the header and footer lines (`GNU coreutils 9.1  September 2022  DU(1)`) go, and the body
//!   loses the indentation every body line shares.
//!
//! Text that does not open with a page header (`NAME(section)` at both ends of the line) is
//! not a rendered page and is read as it is.

/// `Some((name, section))` for a rendered page's header line (`DU(1)  User Commands  DU(1)`).
fn header(line: &str) -> Option<(&str, &str)> {
    let line = line.trim();
    let first = line.split_whitespace().next()?;
    let (name, section) = page_ref(first)?;
    (line.len() > first.len() && line.ends_with(first)).then_some((name, section))
}

/// `Some((name, section))` for `NAME(1)` or `ip-link(8)`: a name, then a section that starts
/// with a digit, in parentheses.
fn page_ref(word: &str) -> Option<(&str, &str)> {
    let (name, rest) = word.split_once('(')?;
    let section = rest.strip_suffix(')')?;
    let named = !name.is_empty() && !name.contains(['(', ')']);
    let numbered = section.starts_with(|c: char| c.is_ascii_digit())
        && section.chars().all(|c| c.is_ascii_alphanumeric());
    (named && numbered).then_some((name, section))
}

/// The indentation of `line`: its leading spaces and tabs, in bytes.
fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

/// `SEE ALSO` → `See also`.
fn sentence_case(heading: &str) -> String {
    let lower = heading.trim().to_lowercase();
    let mut chars = lower.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => lower,
    }
}

/// The text of a rendered manual page with `#` headings; `None` when `text` is not one.
pub(crate) fn to_markdown(text: &str) -> Option<String> {
    let mut lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let first = lines.iter().position(|l| !l.is_empty())?;
    let (name, section) = header(lines[first])?;
    lines.drain(..=first);
    // The footer repeats the page reference at its end.
    if let Some(last) = lines.iter().rposition(|l| !l.is_empty()) {
        if lines[last].ends_with(&format!("{name}({section})")) {
            lines.truncate(last);
        }
    }
    let is_heading = |l: &&str| !l.is_empty() && indent(l) == 0;
    // The body's indentation: the one most indented lines have (subsection headings have
    // less, an option's description more).
    let mut widths = std::collections::BTreeMap::<usize, usize>::new();
    for l in lines.iter().filter(|l| !l.is_empty() && indent(l) > 0) {
        *widths.entry(indent(l)).or_default() += 1;
    }
    let body = widths
        .iter()
        .max_by_key(|&(&n, &count)| (count, std::cmp::Reverse(n)))
        .map_or(0, |(&n, _)| n);
    let mut title: Option<String> = None;
    let mut out: Vec<String> = Vec::new();
    let mut in_name = false;
    for line in &lines {
        if is_heading(line) {
            in_name = line.trim() == "NAME";
            if !in_name {
                out.push(String::new());
                out.push(format!("## {}", sentence_case(line)));
                out.push(String::new());
            }
            continue;
        }
        if in_name {
            if !line.is_empty() {
                let joined = title.take().map_or(String::new(), |t| t + " ");
                title = Some(joined + line.trim());
            }
            continue;
        }
        let n = indent(line);
        if !line.is_empty() && n < body {
            out.push(String::new());
            out.push(format!("### {}", line.trim().trim_end_matches(':')));
            out.push(String::new());
            continue;
        }
        let text = &line[n.min(body)..];
        // A body line never opens a heading (`# mount -a` in an example).
        if text.starts_with('#') {
            out.push(format!("    {text}"));
        } else {
            out.push(text.to_owned());
        }
    }
    let title = title.unwrap_or_else(|| format!("{}({section})", name.to_lowercase()));
    Some(format!("# {title}\n\n{}\n", out.join("\n").trim()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::sources::passages::split;

    const DU: &str = "\
DU(1)                            User Commands                           DU(1)

NAME
       du - estimate file space usage

SYNOPSIS
       du [OPTION]... [FILE]...

DESCRIPTION
       Summarize device usage of the set of FILEs, recursively for
       directories.

       -a, --all
              write counts for all files, not just directories

   Patterns
       # du --exclude='*.o'

SEE ALSO
       Full documentation <https://www.gnu.org/software/coreutils/du>

GNU coreutils 9.1               September 2022                           DU(1)
";

    #[test]
    fn a_rendered_page_is_titled_by_its_name_section_and_split_at_its_sections() {
        let markdown = to_markdown(DU).expect("a rendered page");
        assert!(markdown.starts_with("# du - estimate file space usage\n\n## Synopsis\n"));
        assert!(markdown.contains(
            "## Description\n\nSummarize device usage of the set of FILEs, recursively for\n\
             directories.\n\n-a, --all\n       write counts"
        ));
        // A subsection heading; an example's `#` line stays text.
        assert!(markdown.contains("### Patterns\n\n    # du --exclude='*.o'"));
        assert!(!markdown.contains("GNU coreutils"));
        assert!(!markdown.contains("User Commands"));
        let (title, passages) = split(&markdown, "PAGE");
        assert_eq!(title, "du - estimate file space usage");
        // A page this short is one passage, named by the page and its first section.
        let titles: Vec<&str> = passages.iter().map(|p| p.title.as_str()).collect();
        assert_eq!(titles, ["du - estimate file space usage — Synopsis"]);
    }

    #[test]
    fn text_without_a_page_header_is_not_a_page() {
        assert_eq!(to_markdown("Plain notes.\n\nNAME\n   x - y\n"), None);
        assert_eq!(to_markdown("DU(1) is a command\n"), None);
        assert_eq!(to_markdown(""), None);
        // A page without a NAME section is titled by its header.
        let page = to_markdown("LS(1)   General Commands   LS(1)\n\nDESCRIPTION\n     lists\n");
        assert_eq!(
            page.as_deref(),
            Some("# ls(1)\n\n## Description\n\nlists\n")
        );
    }
}
