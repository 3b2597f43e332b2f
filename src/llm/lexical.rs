//! Plain-text helpers of the offline provider: content words, a light suffix stemmer and a
//! sentence splitter that understands the Markdown of the bundled knowledge base.
//!
//! Deliberately simple and deterministic: the same text always gives the same tokens, so the
//! offline provider's grades and answers are reproducible in tests and benchmarks.

use std::collections::HashSet;

/// Lowercase alphanumeric words of `text`, in order (`today's` gives `today`, `s`).
pub(crate) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// Words that carry meaning: no stopwords, no single letters.
pub(crate) fn content_words(text: &str) -> impl Iterator<Item = String> + '_ {
    words(text)
        .filter(|w| (w.chars().count() > 1 || w.chars().all(char::is_numeric)) && !is_stopword(w))
}

/// The distinct stems of the content words of `text`.
pub(crate) fn stems(text: &str) -> HashSet<String> {
    content_words(text).map(|w| stem(&w)).collect()
}

/// Strips common English inflections so `causes`, `caused`, `causing` and `cause` meet.
///
/// Not a full Porter stemmer: it only has to map a question's words and a passage's words to
/// the same key, and it must never make two different common words collide often.
pub(crate) fn stem(word: &str) -> String {
    if !word.is_ascii() || word.bytes().any(|b| b.is_ascii_digit()) {
        return word.to_owned();
    }
    let mut w = word.to_owned();
    if w.len() > 4 && (w.ends_with("ies") || w.ends_with("ied")) {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if w.ends_with("sses") {
        w.truncate(w.len() - 2);
    } else if w.len() > 3
        && w.ends_with('s')
        && !(w.ends_with("ss") || w.ends_with("us") || w.ends_with("is"))
    {
        w.pop();
    }
    let verb_suffix = if w.len() > 5 && w.ends_with("ing") {
        3
    } else if w.len() > 4 && w.ends_with("ed") {
        2
    } else {
        0
    };
    if verb_suffix > 0 {
        w.truncate(w.len() - verb_suffix);
        // running -> run, stopped -> stop; but falling -> fall, missed -> miss.
        let b = w.as_bytes();
        let n = b.len();
        if n > 2 && b[n - 1] == b[n - 2] && !matches!(b[n - 1], b'l' | b's' | b'z' | b'e' | b'o') {
            w.pop();
        }
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    w
}

/// English function words plus the question scaffolding (`what`, `explain`, `tell me`); sorted.
const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any",
    "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both",
    "but", "by", "can", "could", "describe", "did", "do", "does", "doing", "done", "down",
    "during", "each", "either", "else", "etc", "ever", "explain", "few", "for", "from", "further",
    "get", "gets", "give", "had", "has", "have", "having", "he", "her", "here", "hers", "him",
    "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "know", "let",
    "like", "may", "me", "might", "more", "most", "much", "must", "my", "no", "nor", "not", "now",
    "of", "off", "on", "once", "only", "or", "other", "our", "ours", "out", "over", "own",
    "please", "same", "shall", "she", "should", "so", "some", "such", "tell", "than", "that",
    "the", "their", "them", "then", "there", "these", "they", "this", "those", "through", "to",
    "too", "under", "until", "up", "us", "very", "was", "we", "were", "what", "whats", "when",
    "where", "which", "while", "who", "whom", "whose", "why", "will", "with", "would", "you",
    "your", "yours",
];

/// True for a word in [`STOPWORDS`].
pub(crate) fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

/// Sentences of `text`, trimmed, Markdown headings dropped and list markers and `**` removed.
///
/// Lines are joined into blocks (so hard-wrapped prose stays whole); a blank line, a heading
/// or a list item starts a new block. Inside a block a sentence ends at `.`, `!` or `?`
/// followed by a space and a word that does not start in lowercase, except after an initial
/// (`P. palmivora`) or a common abbreviation (`e.g.`, `Dr.`).
pub(crate) fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut block = String::new();
    for line in text.lines() {
        let line = line.trim();
        let item = list_item(line);
        if line.is_empty() || line.starts_with('#') || item.is_some() {
            split_block(&block, &mut out);
            block.clear();
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !block.is_empty() {
            block.push(' ');
        }
        block.push_str(item.unwrap_or(line));
    }
    split_block(&block, &mut out);
    out
}

/// The text of a Markdown list item (`- x`, `* x`, `+ x`, `1. x`), if `line` is one.
fn list_item(line: &str) -> Option<&str> {
    for marker in ["- ", "* ", "+ "] {
        if let Some(rest) = line.strip_prefix(marker) {
            return Some(rest.trim_start());
        }
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 {
        if let Some(rest) = line[digits..].strip_prefix(". ") {
            return Some(rest.trim_start());
        }
    }
    None
}

fn split_block(block: &str, out: &mut Vec<String>) {
    let block = block.replace("**", "");
    let chars: Vec<(usize, char)> = block.char_indices().collect();
    let mut start = 0;
    for (k, &(i, c)) in chars.iter().enumerate() {
        if !matches!(c, '.' | '!' | '?') {
            continue;
        }
        // Closing quotes or brackets stay with the sentence they end.
        let mut end = k + 1;
        while end < chars.len() && matches!(chars[end].1, '"' | '\'' | ')' | ']' | '”' | '’') {
            end += 1;
        }
        let Some(&(_, space)) = chars.get(end) else {
            continue;
        };
        let next = chars.get(end + 1).map(|&(_, n)| n);
        if !space.is_whitespace() || next.is_none_or(char::is_lowercase) {
            continue;
        }
        if c == '.' && is_abbreviation(&block[start..i]) {
            continue;
        }
        push_sentence(&block[start..chars[end].0], out);
        start = chars[end].0;
    }
    push_sentence(&block[start..], out);
}

/// True when the word just before a period is an initial or a known abbreviation.
pub(crate) fn is_abbreviation(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("")
        .to_lowercase();
    word.chars().count() == 1
        || matches!(
            word.as_str(),
            "e.g"
                | "i.e"
                | "dr"
                | "mr"
                | "mrs"
                | "ms"
                | "st"
                | "vs"
                | "cf"
                | "fig"
                | "no"
                | "approx"
                | "spp"
                | "sp"
                | "var"
                | "cv"
        )
}

fn push_sentence(sentence: &str, out: &mut Vec<String>) {
    let sentence = sentence.trim();
    if !sentence.is_empty() {
        out.push(sentence.to_owned());
    }
}

/// Removes citation markers like `[1]`, `[12]` or `[1, 2]` (see [`citation_markers`]).
pub(crate) fn strip_markers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for marker in citation_markers(text) {
        out.push_str(&text[from..marker.span.start]);
        from = marker.span.end;
    }
    out.push_str(&text[from..]);
    out
}

/// A citation marker in a text: where it is and the document numbers it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Marker {
    pub span: std::ops::Range<usize>,
    pub numbers: Vec<u32>,
}

/// The citation markers of `text`, in order: numbers separated by commas in square brackets
/// (`[1]`, `[1, 2]`). Brackets that index something in code are not markers:
///
/// - inside an inline code span closed on its line (`` `xs[5]` ``, RST's ``` ``xs[5]`` ```);
///   a fence or a span cut short by a quote is plain text, so it hides nothing after it;
/// - right after `)`, `]` or `!` (`f()[0]`, `m[1][2]`, Rust's `vec![2, 5]`), or right after a
///   name when they hold a 0 (`args[0]`: documents are numbered from 1);
/// - followed by what continues an expression (`xs[0].year`, `xs[0][1]`, `xs[0](x)`).
///
/// Documents quoted into an answer carry such code, and a model may write it.
pub(crate) fn citation_markers(text: &str) -> Vec<Marker> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'`' => i = after_code_span(text, i),
            b'[' => {
                let marker = text[i + 1..].find(']').and_then(|c| {
                    let close = i + 1 + c;
                    let numbers = numbers_of(&text[i + 1..close])?;
                    let before = i.checked_sub(1).map(|b| bytes[b]);
                    // `[1][2]` after a space is two citations, not an index of an index.
                    let chained = out.last().is_some_and(|m: &Marker| m.span.end == i);
                    let after = &bytes[close + 1..];
                    let opens_chain = after.first() == Some(&b'[')
                        && before.is_none_or(|b| b.is_ascii_whitespace());
                    let indexes = !chained
                        && (matches!(before, Some(b')' | b']' | b'!'))
                            || (before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
                                && numbers.contains(&0))
                            || (continues_expression(after) && !opens_chain));
                    (!indexes).then_some(Marker {
                        span: i..close + 1,
                        numbers,
                    })
                });
                match marker {
                    Some(marker) => {
                        i = marker.span.end;
                        out.push(marker);
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// Where scanning goes on after the backticks at `start`: past the whole span when one or two
/// backticks open an inline code span that the same run closes on the line, else past the run.
fn after_code_span(text: &str, start: usize) -> usize {
    let bytes = text.as_bytes();
    let run = bytes[start..].iter().take_while(|b| **b == b'`').count();
    let open_end = start + run;
    if run > 2 {
        return open_end;
    }
    let line_end = text[open_end..]
        .find('\n')
        .map_or(text.len(), |n| open_end + n);
    let mut j = open_end;
    while j < line_end {
        if bytes[j] == b'`' {
            let closing = bytes[j..line_end]
                .iter()
                .take_while(|b| **b == b'`')
                .count();
            if closing == run {
                return j + closing;
            }
            j += closing;
        } else {
            j += 1;
        }
    }
    open_end
}

/// The numbers inside a citation marker (`1`, `1, 2`), or `None`.
fn numbers_of(inside: &str) -> Option<Vec<u32>> {
    let numbers: Option<Vec<u32>> = inside
        .split(',')
        .map(|n| {
            let n = n.trim();
            (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .then(|| n.parse().ok())
                .flatten()
        })
        .collect();
    numbers.filter(|n| !n.is_empty())
}

/// Whether `after` (the text right after a `]`) goes on with an expression: `.field`, `[`, `(`.
fn continues_expression(after: &[u8]) -> bool {
    match after {
        [b'.', next, ..] => next.is_ascii_alphabetic() || *next == b'_',
        [b'[' | b'(', ..] => true,
        _ => false,
    }
}

/// `sentence` cut at a word boundary to at most `max` characters, marked with ` ...`.
pub(crate) fn shorten(sentence: &str, max: usize) -> String {
    match sentence.char_indices().nth(max) {
        None => sentence.to_owned(),
        Some((cut, _)) => {
            let head = &sentence[..cut];
            let head = head.rsplit_once(' ').map_or(head, |(h, _)| h);
            format!("{head} ...")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(is_stopword("what") && !is_stopword("canker"));
    }

    #[test]
    fn inflections_meet_at_one_stem() {
        for group in [
            ["cause", "causes", "caused", "causing"],
            ["disease", "diseases", "diseased", "disease"],
            ["canker", "cankers", "canker", "canker"],
            ["study", "studies", "studied", "study"],
            ["run", "running", "run", "runs"],
        ] {
            let first = stem(group[0]);
            for word in group {
                assert_eq!(stem(word), first, "{word}");
            }
        }
        assert_eq!(stem("virus"), "virus");
        assert_eq!(stem("grass"), "grass");
        assert_eq!(stem("falling"), "fall");
        assert_eq!(stem("2024"), "2024");
    }

    #[test]
    fn content_words_drop_stopwords_and_letters() {
        let words: Vec<String> =
            content_words("What is the cause of P. palmivora's 2 cankers?").collect();
        assert_eq!(words, ["cause", "palmivora", "2", "cankers"]);
    }

    #[test]
    fn sentences_split_prose_but_not_initials_or_abbreviations() {
        let text = "# Title\n\nPatch canker is caused by P. palmivora, e.g. in wet soil. It spreads \
                    with rain!\nStill the same sentence? Yes.\n\n## Management\n\n- **Drainage.** Plant on \
                    mounds.\n1. Prune low branches.";
        assert_eq!(
            sentences(text),
            [
                "Patch canker is caused by P. palmivora, e.g. in wet soil.",
                "It spreads with rain!",
                "Still the same sentence?",
                "Yes.",
                "Drainage.",
                "Plant on mounds.",
                "Prune low branches.",
            ]
        );
    }

    #[test]
    fn brackets_that_index_code_are_not_citations() {
        let numbers = |text: &str| -> Vec<Vec<u32>> {
            citation_markers(text)
                .into_iter()
                .map(|m| m.numbers)
                .collect()
        };
        // An extractive answer quoting a README's doctest (python-dateutil).
        let quoted = "year = rrule(YEARLY,dtstart=now)[0].year [2]";
        assert_eq!(numbers(quoted), [vec![2]]);
        assert_eq!(
            numbers("rows[0].name, m[1][2], f[3](x), g()[4]"),
            Vec::<Vec<u32>>::new()
        );
        assert_eq!(numbers("Call `xs[5]` then [1, 3]."), [vec![1, 3]]);
        // An opened fence (a quote cut short) does not hide the markers after it.
        assert_eq!(
            numbers("```python >>> r.text [3] Send requests easily. [3]"),
            [vec![3], vec![3]]
        );
        // Real documents quoted by the extractive answer (byteorder, jsonpointer's neighbours).
        assert_eq!(
            numbers("let rdr = Cursor::new(vec![2, 5, 3, 0]); [1]"),
            [vec![1]]
        );
        assert_eq!(
            numbers("The expression: ``foo.bar[0]`` will return one. [3]"),
            [vec![3]]
        );
        assert_eq!(numbers("args[0] and argv[0], then [2]"), [vec![2]]);
        // A citation at the end of a sentence, or right after a word, is one.
        assert_eq!(
            numbers("Use it [1]. Or this one[2], then [3]"),
            [vec![1], vec![2], vec![3]]
        );
        assert_eq!(strip_markers("f()[0] is first [1]."), "f()[0] is first .");
    }

    #[test]
    fn citation_markers_are_stripped_but_brackets_kept() {
        assert_eq!(strip_markers("A [1] b [12]. [x] [] c"), "A  b . [x] [] c");
        assert_eq!(strip_markers("Palmivora[1]. End [2]"), "Palmivora. End ");
    }

    #[test]
    fn long_sentences_are_cut_at_a_word_boundary() {
        assert_eq!(shorten("one two three", 9), "one two ...");
        assert_eq!(shorten("one two", 9), "one two");
    }
}
