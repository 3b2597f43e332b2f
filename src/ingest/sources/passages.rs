//! Splitting a Markdown or plain-text document into passages for the index.
//!
//! A passage follows the document's structure: it starts at a heading or paragraph boundary,
//! holds roughly [`MIN_WORDS`]..[`MAX_WORDS`] words, and is titled "Document — Section" so a
//! citation says where it came from; the section is the heading path below the title
//! ("Usage — Features" for a `###` under a `##`), split off again at indexing
//! ([`split_title`](crate::knowledge::split_title)) so the document title and the headings are
//! searched as their own fields. Sections shorter than [`MIN_WORDS`] are merged with the
//! next one (their heading kept as a line of text); paragraphs longer than [`MAX_WORDS`] are
//! cut at line, then sentence, then word boundaries.
use crate::knowledge::{squashed, unversioned, TITLE_SEPARATOR};

/// A passage is closed once it has at least this many words and a new section starts.
pub(crate) const MIN_WORDS: usize = 80;
/// A passage never grows past this many words by merging.
pub(crate) const MAX_WORDS: usize = 250;

/// One passage of a document.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Passage {
    /// "Document title — Section heading", or the document title before any section.
    pub title: String,
    /// The passage text.
    pub text: String,
}

/// A paragraph (or a piece of one) with the section it belongs to.
struct Block {
    heading: Option<String>,
    starts_section: bool,
    text: String,
    words: usize,
    /// Separator placed before this block when it joins the previous one.
    sep: &'static str,
}

/// Splits `text` into its title and passages. `fallback_title` is used when the document does
/// not start with a `# Title` line.
#[cfg(test)]
pub(crate) fn split(text: &str, fallback_title: &str) -> (String, Vec<Passage>) {
    split_named(text, fallback_title, None)
}

/// [`split`], for a file that a folder names (see [`folder_name`]): the title says the name
/// when its `# Title` does not (`thiserror: derive(Error)`).
pub(crate) fn split_named(
    text: &str,
    fallback_title: &str,
    name: Option<&str>,
) -> (String, Vec<Passage>) {
    let (title, blocks) = blocks(text.trim_start_matches('\u{feff}'));
    let title = match (title, name) {
        (Some(title), Some(name)) if !squashed(&title).contains(&squashed(name)) => {
            format!("{name}: {title}")
        }
        (Some(title), _) => title,
        (None, _) => fallback_title.to_owned(),
    };
    (title.clone(), chunk(&title, blocks))
}

/// For a `README` or `index` file, the name of its folder without a version suffix
/// (`serde-1.0.2/README.md` → `serde`): such files are named by their folder, not their stem.
pub(crate) fn folder_name(rel_path: &str) -> Option<String> {
    let (folder, file) = rel_path.rsplit_once('/')?;
    let stem = file.split('.').next().unwrap_or(file).to_ascii_lowercase();
    if stem != "readme" && stem != "index" {
        return None;
    }
    let folder = folder.rsplit('/').next().unwrap_or(folder);
    let name = unversioned(folder);
    (!name.is_empty()).then(|| name.to_owned())
}

/// A title for a file without a `# Title` line: its stem with separators as spaces (for a
/// `README` or `index` file, its folder's [`folder_name`]).
pub(crate) fn title_from_path(rel_path: &str) -> String {
    if let Some(name) = folder_name(rel_path) {
        return name;
    }
    let name = rel_path.rsplit('/').next().unwrap_or(rel_path);
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    let words: Vec<&str> = stem
        .split(['-', '_', ' '])
        .filter(|w| !w.is_empty())
        .collect();
    let joined = words.join(" ");
    let mut chars = joined.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => name.to_owned(),
    }
}

/// `Some((level, text))` for an ATX heading line such as `## Symptoms`.
fn heading(line: &str) -> Option<(usize, String)> {
    let trimmed = line.trim_start();
    let level = trimmed.chars().take_while(|&c| c == '#').count();
    let rest = &trimmed[level..];
    if !(1..=6).contains(&level) || !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    Some((level, rest.trim().trim_end_matches('#').trim().to_owned()))
}

/// The document title (a level-1 heading as first non-blank line) and its paragraphs.
fn blocks(text: &str) -> (Option<String>, Vec<Block>) {
    let mut title = None;
    let mut out = Vec::new();
    let mut section: Option<String> = None;
    // The open headings below the title, by level: the section is their path.
    let mut path: Vec<(usize, String)> = Vec::new();
    let mut starts_section = false;
    let mut paragraph: Vec<&str> = Vec::new();
    let mut in_fence = false;
    let mut seen_content = false;

    let mut flush = |paragraph: &mut Vec<&str>, section: &Option<String>, starts: &mut bool| {
        if paragraph.is_empty() {
            return;
        }
        let text = paragraph.join("\n");
        paragraph.clear();
        for (i, (piece, sep)) in pieces(&text).into_iter().enumerate() {
            out.push(Block {
                heading: section.clone(),
                starts_section: *starts && i == 0,
                words: word_count(&piece),
                text: piece,
                sep: if i == 0 { "\n\n" } else { sep },
            });
        }
        *starts = false;
    };

    for line in text.lines() {
        if line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~") {
            in_fence = !in_fence;
        }
        let is_heading = if in_fence { None } else { heading(line) };
        if let Some((level, text)) = is_heading {
            flush(&mut paragraph, &section, &mut starts_section);
            if level == 1 && !seen_content && title.is_none() && !text.is_empty() {
                title = Some(text);
            } else {
                path.retain(|(open, _)| *open < level);
                if !text.is_empty() {
                    path.push((level, text));
                }
                let names: Vec<&str> = path.iter().map(|(_, t)| t.as_str()).collect();
                section = (!names.is_empty()).then(|| names.join(TITLE_SEPARATOR));
                starts_section = true;
            }
            seen_content = true;
        } else if line.trim().is_empty() && !in_fence {
            flush(&mut paragraph, &section, &mut starts_section);
        } else {
            paragraph.push(line.trim_end());
            seen_content = true;
        }
    }
    flush(&mut paragraph, &section, &mut starts_section);
    (title, out)
}

fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// Cuts a paragraph longer than [`MAX_WORDS`] into pieces, each with the separator that
/// joins it to the previous piece.
fn pieces(text: &str) -> Vec<(String, &'static str)> {
    if word_count(text) <= MAX_WORDS {
        return vec![(text.to_owned(), "\n\n")];
    }
    let mut units: Vec<(String, &'static str)> = Vec::new();
    for line in text.lines() {
        if word_count(line) <= MAX_WORDS {
            units.push((line.to_owned(), "\n"));
            continue;
        }
        let mut sentence: Vec<&str> = Vec::new();
        for word in line.split_whitespace() {
            sentence.push(word);
            if word.ends_with(['.', '?', '!']) || sentence.len() == MAX_WORDS {
                units.push((sentence.join(" "), " "));
                sentence.clear();
            }
        }
        if !sentence.is_empty() {
            units.push((sentence.join(" "), " "));
        }
    }
    // Pack the units greedily back into pieces of at most MAX_WORDS.
    let mut out: Vec<(String, &'static str)> = Vec::new();
    let mut words = 0;
    for (unit, sep) in units {
        let n = word_count(&unit);
        match out.last_mut() {
            Some((piece, _)) if words + n <= MAX_WORDS => {
                piece.push_str(sep);
                piece.push_str(&unit);
                words += n;
            }
            _ => {
                out.push((unit, sep));
                words = n;
            }
        }
    }
    out
}

/// Packs blocks into passages of about MIN_WORDS..MAX_WORDS words.
fn chunk(title: &str, blocks: Vec<Block>) -> Vec<Passage> {
    struct Open {
        heading: Option<String>,
        text: String,
        words: usize,
    }
    let mut done: Vec<Open> = Vec::new();
    for block in blocks {
        let start_new = match done.last() {
            None => true,
            Some(open) => {
                open.words + block.words > MAX_WORDS
                    || (open.words >= MIN_WORDS && block.starts_section)
            }
        };
        if start_new {
            done.push(Open {
                heading: block.heading,
                text: block.text,
                words: block.words,
            });
            continue;
        }
        let open = done.last_mut().expect("checked above");
        open.text.push_str(block.sep);
        if block.starts_section {
            if let Some(heading) = &block.heading {
                // The innermost heading reads as the section's first line.
                let (_, last) = heading
                    .rsplit_once(TITLE_SEPARATOR)
                    .unwrap_or(("", heading));
                open.text.push_str(last);
                open.text.push('\n');
            }
        }
        open.text.push_str(&block.text);
        open.words += block.words;
    }
    done.into_iter()
        .map(|open| Passage {
            title: match open.heading {
                Some(heading) => format!("{title}{TITLE_SEPARATOR}{heading}"),
                None => title.to_owned(),
            },
            text: open.text,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::split_title;

    fn words(n: usize, word: &str) -> String {
        vec![word; n].join(" ")
    }

    #[test]
    fn title_comes_from_the_first_heading_or_the_file_name() {
        let (title, passages) = split("# Pink disease\n\nSome text here.", "x");
        assert_eq!(title, "Pink disease");
        assert_eq!(passages[0].title, "Pink disease");
        assert_eq!(passages[0].text, "Some text here.");
        let (title, _) = split("Plain text.", &title_from_path("notes/durian_pests-2.txt"));
        assert_eq!(title, "Durian pests 2");
    }

    #[test]
    fn sections_become_passages_titled_with_their_heading() {
        let text = format!(
            "# Doc\n\n## Cause\n\n{}\n\n## Symptoms\n\n{}\n",
            words(90, "cause"),
            words(90, "symptom")
        );
        let (_, passages) = split(&text, "x");
        assert_eq!(passages.len(), 2);
        assert_eq!(passages[0].title, "Doc — Cause");
        assert_eq!(passages[1].title, "Doc — Symptoms");
        assert!(!passages[1].text.contains("cause"));
    }

    #[test]
    fn short_sections_merge_with_the_next_keeping_the_heading_as_text() {
        let text = format!("# Doc\n\n## A\n\nshort one.\n\n## B\n\n{}", words(50, "b"));
        let (_, passages) = split(&text, "x");
        assert_eq!(passages.len(), 1);
        assert_eq!(passages[0].title, "Doc — A");
        assert!(
            passages[0].text.contains("\n\nB\nb b"),
            "{}",
            passages[0].text
        );
    }

    #[test]
    fn long_paragraphs_are_cut_below_the_maximum() {
        let sentence = format!("{}.", words(30, "word"));
        let text = vec![sentence; 30].join(" ");
        let (_, passages) = split(&text, "x");
        assert!(passages.len() >= 4);
        for p in &passages {
            let n = word_count(&p.text);
            assert!(n <= MAX_WORDS && n > 0, "{n}");
        }
        let total: usize = passages.iter().map(|p| word_count(&p.text)).sum();
        assert_eq!(total, 900);
        let one_giant_sentence = words(600, "w");
        let (_, passages) = split(&one_giant_sentence, "x");
        assert_eq!(passages.len(), 3);
    }

    #[test]
    fn hashes_inside_code_fences_are_not_headings() {
        let (_, passages) = split("# T\n\n```\n# not a heading\n```\n", "x");
        assert_eq!(passages.len(), 1);
        assert_eq!(passages[0].title, "T");
        assert!(passages[0].text.contains("# not a heading"));
        assert_eq!(heading("#hashtag"), None);
        assert_eq!(heading("### Closed ###"), Some((3, "Closed".into())));
    }

    #[test]
    fn passages_carry_the_heading_path_and_readmes_their_folder_name() {
        let text = format!(
            "# derive(Error)\n\n## Usage\n\n{}\n\n### Details\n\n{}\n\n## License\n\n{}",
            words(90, "usage"),
            words(90, "detail"),
            words(90, "license")
        );
        let name = folder_name("crates/thiserror-2.0.1/README.md");
        assert_eq!(name.as_deref(), Some("thiserror"));
        let (title, passages) = split_named(&text, "x", name.as_deref());
        assert_eq!(title, "thiserror: derive(Error)");
        let titles: Vec<&str> = passages.iter().map(|p| p.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "thiserror: derive(Error) — Usage",
                "thiserror: derive(Error) — Usage — Details",
                "thiserror: derive(Error) — License"
            ]
        );
        assert_eq!(
            split_title(titles[1]),
            ("thiserror: derive(Error)", "Usage — Details")
        );
        assert_eq!(split_title("Doc"), ("Doc", ""));
        // A title that already says the name is kept as is.
        let (title, _) = split_named("# The Serde crate\n\ntext", "x", Some("serde"));
        assert_eq!(title, "The Serde crate");
        assert_eq!(
            title_from_path("a/toml_edit-0.25.18+spec-1.1.0/readme.txt"),
            "toml_edit"
        );
        assert_eq!(folder_name("notes/guide.md"), None);
        assert_eq!(folder_name("README.md"), None);
    }

    #[test]
    fn empty_documents_have_no_passages() {
        assert!(split("", "x").1.is_empty());
        assert!(split("# Only a title\n\n\n", "x").1.is_empty());
    }
}
