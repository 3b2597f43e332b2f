//! The trail's table of long texts: each long string a run's states hold (a passage's text, an
//! answer) is kept once per run, and the trail's start and patches refer to it by its place in
//! the table. A passage that a retrieval adds, a grading sets aside and a later step shifts
//! within its list is then written once, not once per step that moves it.
//!
//! A reference is a string of a NUL followed by the text's index. Every string that itself
//! begins with a NUL is put in the table whatever its length, so a string of the state is
//! never read as a reference.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// Strings this long or longer go into the table (shorter ones cost less than a reference).
const LONG: usize = 64;

/// Marks a reference.
const MARK: char = '\0';

/// The long texts of one run, each once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub(super) struct Texts {
    texts: Vec<String>,
    /// Where each text is in `texts`; rebuilt after a load.
    #[serde(skip)]
    index: HashMap<String, usize>,
}

/// A reference that names no text of the table.
#[derive(Debug)]
pub(super) struct Dangling(pub(super) String);

impl Texts {
    /// True when the table holds nothing.
    pub(super) fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// `value` with every long string replaced by a reference to its (now kept) text.
    pub(super) fn intern(&mut self, value: Value) -> Value {
        if self.index.len() != self.texts.len() {
            self.index = (self.texts.iter().cloned())
                .enumerate()
                .map(|(i, t)| (t, i))
                .collect();
        }
        self.intern_value(value)
    }

    fn intern_value(&mut self, value: Value) -> Value {
        match value {
            Value::String(s) if s.len() >= LONG || s.starts_with(MARK) => {
                let at = match self.index.get(&s) {
                    Some(&at) => at,
                    None => {
                        self.texts.push(s.clone());
                        self.index.insert(s, self.texts.len() - 1);
                        self.texts.len() - 1
                    }
                };
                Value::String(format!("{MARK}{at}"))
            }
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.intern_value(v)).collect())
            }
            Value::Object(fields) => Value::Object(
                fields
                    .into_iter()
                    .map(|(k, v)| (k, self.intern_value(v)))
                    .collect(),
            ),
            other => other,
        }
    }

    /// `value` with every reference replaced by its text.
    pub(super) fn resolve(&self, value: Value) -> Result<Value, Dangling> {
        Ok(match value {
            Value::String(s) if s.starts_with(MARK) => {
                let text = s[MARK.len_utf8()..]
                    .parse::<usize>()
                    .ok()
                    .and_then(|at| self.texts.get(at));
                Value::String(text.cloned().ok_or(Dangling(s))?)
            }
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|v| self.resolve(v))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(fields) => Value::Object(
                fields
                    .into_iter()
                    .map(|(k, v)| Ok((k, self.resolve(v)?)))
                    .collect::<Result<_, _>>()?,
            ),
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_long_text_is_kept_once_and_comes_back_as_it_was() {
        let long =
            "a passage of some length that goes on past the threshold of the table".repeat(2);
        let nul = "\u{0}7 looks like a reference but is the state's own".to_owned();
        let state = json!({"docs": [{"text": long}, {"text": long}], "short": "kept", "odd": nul});
        let mut texts = Texts::default();
        let interned = texts.intern(state.clone());
        assert_eq!(
            texts.texts.len(),
            2,
            "the repeated passage once, the NUL string once"
        );
        assert_eq!(interned["short"], "kept");
        assert_eq!(interned["docs"][0], interned["docs"][1]);
        assert!(interned.to_string().len() < state.to_string().len() / 2);
        assert_eq!(texts.resolve(interned).unwrap(), state);
    }

    #[test]
    fn a_loaded_table_goes_on_numbering_where_it_stopped() {
        let mut texts = Texts::default();
        let first = texts.intern(json!("x".repeat(LONG)));
        let mut loaded: Texts =
            serde_json::from_value(serde_json::to_value(&texts).unwrap()).unwrap();
        assert_eq!(loaded.intern(json!("x".repeat(LONG))), first);
        assert_eq!(loaded.intern(json!("y".repeat(LONG))), json!("\u{0}1"));
    }

    #[test]
    fn a_reference_past_the_table_is_refused() {
        let texts = Texts::default();
        assert!(texts.resolve(json!({"a": "\u{0}3"})).is_err());
    }
}
