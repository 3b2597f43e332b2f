//! A span's attributes as recorded (typed `tracing` fields) and as exported: the GenAI
//! conventions' names the call sites record ([`crate::genai`]), with OpenInference's
//! `openinference.span.kind` where the conventions have no word (a workflow step is a `CHAIN`,
//! a run an `AGENT`, a web search that returns documents a `RETRIEVER`), text content dropped
//! unless content capture is on, and the conventions' structured values (the finish reasons as
//! an array, the retrieved documents as their JSON) in their exported form. Tools that read
//! only OpenInference's own names (Arize Phoenix among them) translate the GenAI ones
//! themselves.

use crate::genai::CONTENT;
use serde_json::Value as Json;

/// One attribute value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AttrValue {
    /// Text.
    Str(String),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Double(f64),
    /// A flag.
    Bool(bool),
    /// A list of texts.
    StrArray(Vec<String>),
}

impl AttrValue {
    fn str(&self) -> Option<&str> {
        match self {
            AttrValue::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Recorded fields that are no attributes: the span's name and kind, and the remote parent.
const NOT_ATTRIBUTES: &[&str] = &["otel.name", "otel.kind", "traceparent"];

/// OpenInference's span kind for a span with this `gen_ai.operation.name` (none: a step).
fn span_kind(operation: Option<&str>, has_documents: bool) -> &'static str {
    match operation {
        Some("chat") => "LLM",
        Some("embeddings") => "EMBEDDING",
        Some("retrieval") => "RETRIEVER",
        Some("execute_tool") if has_documents => "RETRIEVER",
        Some("execute_tool") => "TOOL",
        Some("invoke_workflow" | "invoke_agent") => "AGENT",
        _ => "CHAIN",
    }
}

/// The attributes to export for `recorded`, with or without text content.
pub(crate) fn exported(
    recorded: &[(String, AttrValue)],
    content: bool,
) -> Vec<(String, AttrValue)> {
    let get = |key: &str| recorded.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let mut out: Vec<(String, AttrValue)> = Vec::with_capacity(recorded.len() + 1);
    for (key, value) in recorded {
        let key = key.as_str();
        if NOT_ATTRIBUTES.contains(&key) || (!content && CONTENT.contains(&key)) {
            continue;
        }
        let value = match (key, value) {
            ("gen_ai.response.finish_reasons", AttrValue::Str(reason)) => {
                AttrValue::StrArray(vec![reason.clone()])
            }
            ("gen_ai.retrieval.documents", AttrValue::Str(json)) if !content => {
                AttrValue::Str(without_content(json))
            }
            (_, value) => value.clone(),
        };
        out.push((key.to_owned(), value));
    }
    let operation = get("gen_ai.operation.name").and_then(AttrValue::str);
    let has_documents = get("gen_ai.retrieval.documents").is_some();
    out.push((
        "openinference.span.kind".to_owned(),
        AttrValue::Str(span_kind(operation, has_documents).to_owned()),
    ));
    out
}

/// The recorded documents (a JSON array) without their text.
fn without_content(json: &str) -> String {
    let mut documents = match serde_json::from_str::<Json>(json) {
        Ok(Json::Array(documents)) => documents,
        _ => Vec::new(),
    };
    for document in &mut documents {
        if let Some(object) = document.as_object_mut() {
            object.remove("content");
        }
    }
    Json::Array(documents).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> AttrValue {
        AttrValue::Str(v.to_owned())
    }

    fn chat_span() -> Vec<(String, AttrValue)> {
        vec![
            ("otel.name".into(), s("chat m")),
            ("otel.kind".into(), s("client")),
            ("gen_ai.operation.name".into(), s("chat")),
            ("gen_ai.provider.name".into(), s("openai")),
            ("gen_ai.request.model".into(), s("m")),
            ("gen_ai.usage.input_tokens".into(), AttrValue::Int(12)),
            ("gen_ai.usage.output_tokens".into(), AttrValue::Int(5)),
            ("gen_ai.response.finish_reasons".into(), s("stop")),
            (
                "gen_ai.input.messages".into(),
                s(r#"[{"role":"user","parts":[]}]"#),
            ),
            (
                "gen_ai.output.messages".into(),
                s(r#"[{"role":"assistant","parts":[{"type":"text","content":"Hi"}]}]"#),
            ),
        ]
    }

    fn get<'a>(attrs: &'a [(String, AttrValue)], key: &str) -> Option<&'a AttrValue> {
        attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    #[test]
    fn a_chat_span_keeps_its_text_out_by_default() {
        let out = exported(&chat_span(), false);
        assert_eq!(get(&out, "openinference.span.kind"), Some(&s("LLM")));
        assert_eq!(
            get(&out, "gen_ai.usage.input_tokens"),
            Some(&AttrValue::Int(12))
        );
        assert_eq!(
            get(&out, "gen_ai.response.finish_reasons"),
            Some(&AttrValue::StrArray(vec!["stop".into()]))
        );
        for key in [
            "otel.name",
            "otel.kind",
            "gen_ai.input.messages",
            "gen_ai.output.messages",
        ] {
            assert_eq!(get(&out, key), None, "{key}");
        }
        let with_content = exported(&chat_span(), true);
        assert!(get(&with_content, "gen_ai.input.messages").is_some());
        assert!(get(&with_content, "gen_ai.output.messages").is_some());
    }

    #[test]
    fn documents_lose_their_text_unless_content_is_captured() {
        let json = r#"[{"id":"p1","score":2.5,"metadata":{"source":"kb://a.md#1"},"content":"secret text"}]"#;
        let recorded = vec![
            ("gen_ai.operation.name".into(), s("retrieval")),
            ("gen_ai.retrieval.documents".into(), s(json)),
        ];
        let out = exported(&recorded, false);
        assert_eq!(get(&out, "openinference.span.kind"), Some(&s("RETRIEVER")));
        assert_eq!(
            get(&out, "gen_ai.retrieval.documents"),
            Some(&s(
                r#"[{"id":"p1","metadata":{"source":"kb://a.md#1"},"score":2.5}]"#
            ))
        );
        assert_eq!(
            get(&exported(&recorded, true), "gen_ai.retrieval.documents"),
            Some(&s(json))
        );
    }

    #[test]
    fn a_step_is_a_chain_a_run_an_agent_and_a_web_search_a_retriever() {
        let out = exported(&[("node".into(), s("generate"))], false);
        assert_eq!(get(&out, "openinference.span.kind"), Some(&s("CHAIN")));
        let run = [("gen_ai.operation.name".into(), s("invoke_workflow"))];
        let out = exported(&run, false);
        assert_eq!(get(&out, "openinference.span.kind"), Some(&s("AGENT")));
        let web = [
            ("gen_ai.operation.name".into(), s("execute_tool")),
            ("gen_ai.retrieval.documents".into(), s("[]")),
        ];
        assert_eq!(
            get(&exported(&web, false), "openinference.span.kind"),
            Some(&s("RETRIEVER"))
        );
    }
}
