//! Decodes the `answer` field of a streamed `generate_answer` reply as it arrives.
//! (Temporary re-decoding version; replaced by the incremental decoder.)

/// Turns raw content deltas of `{"answer": "..."}` into answer-text deltas.
#[derive(Debug, Default)]
pub struct AnswerDeltas {
    raw: String,
    emitted: usize,
}

impl AnswerDeltas {
    /// A decoder at the start of a reply.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a raw delta; returns the answer text newly decoded (possibly empty).
    pub fn push(&mut self, raw: &str) -> String {
        self.raw.push_str(raw);
        let decoded = decode_prefix(&self.raw);
        let chars: Vec<char> = decoded.chars().collect();
        if chars.len() <= self.emitted {
            return String::new();
        }
        let new: String = chars[self.emitted..].iter().collect();
        self.emitted = chars.len();
        new
    }
}

fn decode_prefix(raw: &str) -> String {
    let Some(key) = raw.find("\"answer\"") else {
        return String::new();
    };
    let rest = &raw[key + 8..];
    let Some(colon) = rest.find(':') else {
        return String::new();
    };
    let rest = rest[colon + 1..].trim_start();
    let Some(body) = rest.strip_prefix('"') else {
        return String::new();
    };
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => {
                let Some(e) = chars.next() else { break };
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'u' => {
                        let hex: String = chars.by_ref().take(4).collect();
                        if hex.len() < 4 {
                            break;
                        }
                        match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                            Some(ch) => out.push(ch),
                            None => break,
                        }
                    }
                    other => out.push(other),
                }
            }
            c => out.push(c),
        }
    }
    out
}
