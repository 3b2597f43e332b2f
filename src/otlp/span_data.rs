//! One span as the layer records it: its ids, name, kind, times and typed attributes.

use super::attributes::AttrValue;
use super::context::SpanContext;
use std::fmt::Write as _;
use tracing::field::{Field, Visit};

/// One span as it is recorded and exported.
#[derive(Debug, Clone)]
pub(crate) struct SpanData {
    pub(super) context: SpanContext,
    pub(super) parent: Option<u64>,
    pub(super) name: String,
    /// A client span (`otel.kind = "client"`), else internal.
    pub(super) client: bool,
    pub(super) start: u128,
    pub(super) end: u128,
    pub(super) attributes: Vec<(String, AttrValue)>,
}

impl Visit for SpanData {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut text = String::new();
        let _ = write!(text, "{value:?}");
        self.set(field.name(), AttrValue::Str(text));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.set(field.name(), AttrValue::Str(value.to_owned()));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.set(
            field.name(),
            AttrValue::Int(i64::try_from(value).unwrap_or(i64::MAX)),
        );
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field.name(), AttrValue::Int(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.set(field.name(), AttrValue::Double(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.set(field.name(), AttrValue::Bool(value));
    }
}

impl SpanData {
    fn set(&mut self, key: &str, value: AttrValue) {
        match (key, value) {
            ("otel.name", AttrValue::Str(name)) => self.name = name,
            ("otel.kind", AttrValue::Str(kind)) => self.client = kind == "client",
            (key, value) => match self.attributes.iter_mut().find(|(k, _)| k == key) {
                Some(slot) => slot.1 = value,
                None => self.attributes.push((key.to_owned(), value)),
            },
        }
    }

    pub(super) fn attribute(&self, key: &str) -> Option<&AttrValue> {
        let (_, value) = self.attributes.iter().find(|(k, _)| k == key)?;
        Some(value)
    }

    pub(super) fn str_attribute(&self, key: &str) -> Option<&str> {
        match self.attribute(key)? {
            AttrValue::Str(s) => Some(s),
            _ => None,
        }
    }

    pub(super) fn failed(&self) -> bool {
        self.str_attribute("outcome").is_some_and(|o| o != "ok")
    }
}
