//! Incremental decoding of a streamed `generate_answer` reply into answer text.
//!
//! The model streams raw JSON (`{"answer": "..."}`), which is no use to a reader as it is.
//! [`AnswerDeltas`] takes the raw content deltas in order and returns the decoded text of the
//! answer string as it becomes available: JSON escapes (`\n`, `\"`, `\\`, `\uXXXX`, surrogate
//! pairs) may be split anywhere across deltas. Leading whitespace and a Markdown code fence
//! (```` ```json ````) before the object are accepted, as [`ask`](super::ask) accepts them.
//! Nothing after the closing quote is returned; content of any other shape returns nothing at
//! all, and the caller shows the parsed final answer instead.

/// How much may come before the answer's opening quote (whitespace, a fence) before the
/// content is taken not to be a `{"answer": ...}` object.
const MAX_PREFIX_BYTES: usize = 1024;

/// Turns the raw content deltas of a `generate_answer` reply into decoded answer-text deltas.
///
/// ```
/// use bounded_rag::llm::AnswerDeltas;
///
/// let mut deltas = AnswerDeltas::new();
/// assert_eq!(deltas.push(r#"{"answer": "Line\"#), "Line");
/// assert_eq!(deltas.push(r#"n two \u00"#), "\n two ");
/// assert_eq!(deltas.push(r#"e9"} trailing"#), "é");
/// assert!(deltas.is_done());
/// ```
#[derive(Debug, Default)]
pub struct AnswerDeltas {
    state: State,
    /// The raw text read before the answer's opening quote.
    prefix: String,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the opening quote of the answer's value.
    #[default]
    Prefix,
    /// Inside the answer string.
    Text(Escape),
    /// After the closing quote: the answer is whole.
    Done,
    /// The content is not a `{"answer": "..."}` object.
    Rejected,
}

/// Where the decoder is in an escape sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    /// Not in one.
    None,
    /// After `\`.
    Backslash,
    /// After `\u` and `digits` hex digits, worth `value` so far.
    Unicode { value: u32, digits: u8 },
    /// After a whole `\uXXXX` high surrogate, expecting `\`.
    High(u32),
    /// After a high surrogate and `\`, expecting `u`.
    HighBackslash(u32),
    /// After a high surrogate, `\u` and `digits` hex digits of the low one.
    Low { high: u32, value: u32, digits: u8 },
}

impl AnswerDeltas {
    /// A decoder at the start of a reply.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next raw delta; returns the answer text it completes (possibly empty).
    pub fn push(&mut self, raw: &str) -> String {
        let mut out = String::new();
        let text = match self.state {
            State::Done | State::Rejected => return out,
            State::Text(_) => raw,
            State::Prefix => {
                self.prefix.push_str(raw);
                match opening(&self.prefix) {
                    Opening::Incomplete if self.prefix.len() <= MAX_PREFIX_BYTES => return out,
                    Opening::Incomplete | Opening::Rejected => {
                        self.state = State::Rejected;
                        self.prefix = String::new();
                        return out;
                    }
                    Opening::At(start) => {
                        self.state = State::Text(Escape::None);
                        let prefix = std::mem::take(&mut self.prefix);
                        self.decode(&prefix[start..], &mut out);
                        return out;
                    }
                }
            }
        };
        self.decode(text, &mut out);
        out
    }

    /// True once the answer's closing quote has been read: what was returned is the whole
    /// answer.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decodes the inside of the answer string, up to its closing quote.
    fn decode(&mut self, text: &str, out: &mut String) {
        for c in text.chars() {
            let State::Text(escape) = self.state else {
                return;
            };
            self.state = step(escape, c, out);
        }
    }
}

/// One character of the answer string in escape state `escape`: what it appends to `out` and
/// the next state.
fn step(escape: Escape, c: char, out: &mut String) -> State {
    let next = match escape {
        Escape::None => match c {
            '"' => return State::Done,
            '\\' => Escape::Backslash,
            c => {
                out.push(c);
                Escape::None
            }
        },
        Escape::Backslash => match c {
            'u' => Escape::Unicode {
                value: 0,
                digits: 0,
            },
            c => {
                out.push(match c {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    // `"`, `\`, `/`, and (leniently) anything else stand for themselves.
                    c => c,
                });
                Escape::None
            }
        },
        Escape::Unicode { value, digits } => match hex(value, digits, c) {
            Some((value, 4)) => unit(value, out),
            Some((value, digits)) => Escape::Unicode { value, digits },
            None => return bad_escape(Escape::None, c, out),
        },
        Escape::High(high) => match c {
            '\\' => Escape::HighBackslash(high),
            c => return bad_escape(Escape::None, c, out),
        },
        Escape::HighBackslash(high) => match c {
            'u' => Escape::Low {
                high,
                value: 0,
                digits: 0,
            },
            // The backslash started another escape.
            c => return bad_escape(Escape::Backslash, c, out),
        },
        Escape::Low {
            high,
            value,
            digits,
        } => match hex(value, digits, c) {
            Some((low, 4)) if is_low(low) => {
                let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
                Escape::None
            }
            Some((value, 4)) => {
                // A lone high surrogate, then an escape of its own.
                out.push(char::REPLACEMENT_CHARACTER);
                unit(value, out)
            }
            Some((value, digits)) => Escape::Low {
                high,
                value,
                digits,
            },
            None => {
                out.push(char::REPLACEMENT_CHARACTER);
                return bad_escape(Escape::None, c, out);
            }
        },
    };
    State::Text(next)
}

/// A whole `\uXXXX` worth `value`: a high surrogate waits for its low half, anything else is
/// appended (a lone low surrogate as a replacement character).
fn unit(value: u32, out: &mut String) -> Escape {
    if is_high(value) {
        return Escape::High(value);
    }
    out.push(char::from_u32(value).unwrap_or(char::REPLACEMENT_CHARACTER));
    Escape::None
}

/// An escape that went wrong before `c`: one replacement character, then `c` read afresh in
/// state `then`.
fn bad_escape(then: Escape, c: char, out: &mut String) -> State {
    out.push(char::REPLACEMENT_CHARACTER);
    step(then, c, out)
}

/// `value` with one more hex digit `c`, and the digit count; `None` when `c` is not hex.
fn hex(value: u32, digits: u8, c: char) -> Option<(u32, u8)> {
    c.to_digit(16).map(|d| (value << 4 | d, digits + 1))
}

fn is_high(unit: u32) -> bool {
    (0xD800..0xDC00).contains(&unit)
}

fn is_low(unit: u32) -> bool {
    (0xDC00..0xE000).contains(&unit)
}

/// Where the answer string starts in the raw text read so far.
#[derive(Debug, PartialEq, Eq)]
enum Opening {
    /// Just after its opening quote, at this byte offset.
    At(usize),
    /// Not yet known: everything so far fits.
    Incomplete,
    /// Not a `{"answer": "..."}` object.
    Rejected,
}

/// Matches `[ws] [```lang ws] { ws "answer" ws : ws "` at the start of `raw`.
fn opening(raw: &str) -> Opening {
    let mut rest = raw.trim_start();
    if rest.starts_with('`') {
        rest = match expect(rest, "```") {
            Ok(after) => after.trim_start_matches(|c: char| c.is_ascii_alphanumeric()),
            Err(opening) => return opening,
        };
        if rest.is_empty() {
            // The language name may go on.
            return Opening::Incomplete;
        }
    }
    for token in ["{", "\"answer\"", ":", "\""] {
        rest = match expect(rest.trim_start(), token) {
            Ok(after) => after,
            Err(opening) => return opening,
        };
    }
    Opening::At(raw.len() - rest.len())
}

/// `text` after `token`, or whether `text` may still become it.
fn expect<'a>(text: &'a str, token: &str) -> Result<&'a str, Opening> {
    match text.strip_prefix(token) {
        Some(after) => Ok(after),
        None if token.starts_with(text) => Err(Opening::Incomplete),
        None => Err(Opening::Rejected),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Feeds `chunks` in order; returns every output.
    fn feed<'a>(chunks: impl IntoIterator<Item = &'a str>) -> (Vec<String>, bool) {
        let mut deltas = AnswerDeltas::new();
        let out = chunks.into_iter().map(|c| deltas.push(c)).collect();
        (out, deltas.is_done())
    }

    /// `raw` cut at the given byte offsets (each moved down to a char boundary).
    fn split(raw: &str, cuts: &[usize]) -> Vec<String> {
        let mut cuts: Vec<usize> = cuts
            .iter()
            .map(|&cut| {
                (0..=cut.min(raw.len()))
                    .rev()
                    .find(|&i| raw.is_char_boundary(i))
            })
            .map(|cut| cut.unwrap_or(0))
            .collect();
        cuts.push(raw.len());
        cuts.sort_unstable();
        let mut start = 0;
        let mut chunks = Vec::new();
        for cut in cuts {
            chunks.push(raw[start..cut].to_owned());
            start = cut;
        }
        chunks
    }

    /// Every character of `s` as `\uXXXX` (UTF-16 units, so surrogate pairs above U+FFFF).
    fn all_escaped(s: &str) -> String {
        let units: String = s.encode_utf16().map(|u| format!("\\u{u:04x}")).collect();
        format!("{{\"answer\":\"{units}\"}}")
    }

    #[test]
    fn text_is_returned_as_it_arrives() {
        let (out, done) = feed([r#"{"answer": "Hel"#, r#"lo\"#, r#"n"#, r#"wor"#, r#"ld"}"#]);
        assert_eq!(out, ["Hel", "lo", "\n", "wor", "ld"]);
        assert!(done);
    }

    #[test]
    fn escapes_split_at_every_position_decode_the_same() {
        let raw = r#"{"answer": "a\"b\\c\nd\/\t\u00e9\ud83d\ude00 end"}"#;
        let expected = "a\"b\\c\nd/\t\u{e9}\u{1F600} end";
        for cut in 0..=raw.len() {
            let (out, done) = feed([&raw[..cut], &raw[cut..]]);
            assert_eq!(out.concat(), expected, "cut at {cut}");
            assert!(done);
        }
        let singles: Vec<String> = raw.chars().map(String::from).collect();
        let (out, _) = feed(singles.iter().map(String::as_str));
        assert_eq!(out.concat(), expected);
    }

    #[test]
    fn whitespace_and_a_fence_before_the_object_are_accepted() {
        let raw = "  ```json\n{\n  \"answer\" : \"hi\"\n}\n```";
        let singles: Vec<String> = raw.chars().map(String::from).collect();
        let (out, done) = feed(singles.iter().map(String::as_str));
        assert_eq!(out.concat(), "hi");
        assert!(done);
        assert_eq!(feed(["```json{\"answer\":\"x\"}```"]).0, ["x"]);
        assert_eq!(feed(["``", "`\n{\"answer\":\"y\"}"]).0, ["", "y"]);
    }

    #[test]
    fn nothing_after_the_closing_quote_is_returned() {
        let (out, done) = feed([r#"{"answer":"x"}  "#, r#"{"answer":"more"}"#]);
        assert_eq!(out, ["x", ""]);
        assert!(done);
    }

    #[test]
    fn other_shapes_return_nothing() {
        for raw in [
            r#"{"binary_score":"yes"}"#,
            r#"Sure! {"answer":"x"}"#,
            r#"["answer"]"#,
            r#"{"answer": 42}"#,
            r#"{"answers":"x"}"#,
            "",
        ] {
            let singles: Vec<String> = raw.chars().map(String::from).collect();
            let (out, done) = feed(singles.iter().map(String::as_str));
            assert_eq!(out.concat(), "", "{raw}");
            assert!(!done, "{raw}");
        }
        let mut deltas = AnswerDeltas::new();
        assert_eq!(deltas.push(&" ".repeat(MAX_PREFIX_BYTES + 1)), "");
        assert_eq!(deltas.push(r#"{"answer":"late"}"#), "");
    }

    #[test]
    fn an_unfinished_answer_is_not_done() {
        let (out, done) = feed([r#"{"answer":"half"#]);
        assert_eq!(out, ["half"]);
        assert!(!done);
    }

    #[test]
    fn broken_unicode_escapes_become_replacement_characters() {
        let r = char::REPLACEMENT_CHARACTER;
        let cases = [
            (r#"\ud83d!"#, format!("{r}!")),
            (r#"\ude00!"#, format!("{r}!")),
            (r#"\ud83d\n"#, format!("{r}\n")),
            (r#"\ud83d\u0041"#, format!("{r}A")),
            (r#"\ud83d\ud83d\ude00"#, format!("{r}\u{1F600}")),
            (r#"\u00zz"#, format!("{r}zz")),
        ];
        for (escaped, expected) in cases {
            let raw = format!(r#"{{"answer":"{escaped}"}}"#);
            let (out, done) = feed([raw.as_str()]);
            assert_eq!(out.concat(), expected, "{escaped}");
            assert!(done, "{escaped}");
        }
    }

    proptest! {
        #[test]
        fn any_split_of_an_encoded_answer_decodes_to_it(
            s in any::<String>(),
            cuts in prop::collection::vec(any::<usize>(), 0..12),
        ) {
            let raw = serde_json::to_string(&json!({ "answer": s })).unwrap();
            let cuts: Vec<usize> = cuts.iter().map(|c| c % (raw.len() + 1)).collect();
            let chunks = split(&raw, &cuts);
            let (out, done) = feed(chunks.iter().map(String::as_str));
            prop_assert_eq!(out.concat(), s);
            prop_assert!(done);
        }

        #[test]
        fn any_split_of_a_fenced_pretty_or_escaped_answer_decodes_to_it(
            s in any::<String>(),
            cuts in prop::collection::vec(any::<usize>(), 0..12),
            escaped in any::<bool>(),
        ) {
            let raw = if escaped {
                all_escaped(&s)
            } else {
                let pretty = serde_json::to_string_pretty(&json!({ "answer": s })).unwrap();
                format!("```json\n{pretty}\n```")
            };
            let cuts: Vec<usize> = cuts.iter().map(|c| c % (raw.len() + 1)).collect();
            let chunks = split(&raw, &cuts);
            let (out, done) = feed(chunks.iter().map(String::as_str));
            prop_assert_eq!(out.concat(), s);
            prop_assert!(done);
        }
    }
}
