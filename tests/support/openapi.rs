//! The `openapi.yaml` checker of the contract tests (`tests/openapi*.rs`): one answer of a handler
//! ([`Exchange`], from [`call`] or [`call_stream`]) is checked against the operation it hits —
//! status code documented, content type listed, body valid against the schema (`$ref`s into
//! `components` resolved, formats checked), required headers present and well-formed — and
//! [`Spec::never_seen`] lists the documented statuses no answer produced.

use bounded_rag::entry::{api, stream_function, App};
use bounded_rag::runs::WorkQueue;
use lambda_http::http::HeaderMap;
use serde_json::Value;
use std::collections::BTreeSet;

const SPEC: &str = include_str!("../../openapi.yaml");

/// Documented answers no test can produce deterministically, and why.
const UNREACHABLE: &[(&str, &str, &str)] = &[(
    "post",
    "/workflow/runs",
    "409: only when two requests with one Idempotency-Key race to create the same run",
)];

/// One answer of a handler.
#[derive(Debug)]
pub(crate) struct Exchange {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

/// The document, and the (method, path template, status) triples answers used.
pub(crate) struct Spec {
    pub(crate) doc: Value,
    seen: BTreeSet<(String, String, String)>,
}

impl Spec {
    pub(crate) fn load() -> Self {
        let doc: Value = serde_norway::from_str(SPEC).expect("openapi.yaml is YAML");
        assert!(
            doc["openapi"]
                .as_str()
                .is_some_and(|v| v.starts_with("3.1.")),
            "OpenAPI 3.1"
        );
        Self {
            doc,
            seen: BTreeSet::new(),
        }
    }

    /// Follows `$ref`s (`#/...` JSON pointers into this document).
    pub(crate) fn resolve<'a>(&'a self, mut value: &'a Value) -> &'a Value {
        while let Some(pointer) = value.get("$ref").and_then(Value::as_str) {
            let pointer = pointer.strip_prefix('#').expect("local $ref");
            value = self
                .doc
                .pointer(pointer)
                .unwrap_or_else(|| panic!("dangling $ref {pointer}"));
        }
        value
    }

    /// The path template and operation that `method path` hits, if documented.
    pub(crate) fn operation(&self, method: &str, path: &str) -> Option<(String, &Value)> {
        let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
        let paths = self.doc["paths"].as_object().expect("paths");
        paths.iter().find_map(|(template, item)| {
            let parts: Vec<&str> = template.split('/').collect();
            let matches = parts.len() == segments.len()
                && parts
                    .iter()
                    .zip(&segments)
                    .all(|(p, s)| p == s || (p.starts_with('{') && !s.is_empty()));
            let operation = item.get(method.to_ascii_lowercase())?;
            matches.then(|| (template.clone(), operation))
        })
    }

    /// Errors of `instance` against `schema` (a schema of this document).
    pub(crate) fn schema_errors(&self, schema: &Value, instance: &Value) -> Vec<String> {
        let mut schema = schema.clone();
        // `$ref`s point into `#/components/...`: carry the components along so they resolve.
        schema
            .as_object_mut()
            .expect("schema object")
            .insert("components".into(), self.doc["components"].clone());
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(&schema)
            .unwrap_or_else(|e| panic!("bad schema: {e}"));
        validator
            .iter_errors(instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect()
    }

    /// Checks one answer against the document; panics naming everything that does not fit.
    pub(crate) fn check(&mut self, x: &Exchange) {
        let context = format!(
            "{} {} -> {}: {}",
            x.method,
            x.path,
            x.status,
            String::from_utf8_lossy(&x.body)
        );
        let Some(content_type) = x.headers.get("content-type") else {
            // Only a documented answer without content (`204`) has no content type.
            let (template, operation) = self.operation(&x.method, &x.path).expect(&context);
            let status = x.status.to_string();
            let response = self.resolve(&operation["responses"][&status]);
            assert!(
                response.get("content").is_none() && x.body.is_empty(),
                "{context}"
            );
            self.seen
                .insert((x.method.to_ascii_lowercase(), template, status));
            return;
        };
        let content_type = content_type.to_str().unwrap().to_owned();
        let Some((template, operation)) = self.operation(&x.method, &x.path) else {
            // Not an operation (unknown route, another method): still the documented Error.
            assert!(matches!(x.status, 404 | 405), "{context}");
            assert_eq!(content_type, "application/json", "{context}");
            let error = self.doc["components"]["schemas"]["Error"].clone();
            let errors = self.schema_errors(&error, &serde_json::from_slice(&x.body).unwrap());
            assert!(errors.is_empty(), "{context}\n{errors:#?}");
            return;
        };
        let status = x.status.to_string();
        let responses = &operation["responses"];
        let documented = responses.get(&status).is_some();
        let response = self.resolve(
            responses
                .get(&status)
                .or_else(|| responses.get("default"))
                .unwrap_or_else(|| panic!("undocumented status: {context}")),
        );
        let media = response["content"]
            .get(&content_type)
            .unwrap_or_else(|| panic!("content type {content_type} not listed: {context}"));
        let schema = self.resolve(&media["schema"]).clone();
        // A text/event-stream body is checked event by event, as an SSE client (and
        // schemathesis) reads it.
        let instances = match content_type.as_str() {
            "application/json" => {
                vec![serde_json::from_slice(&x.body).unwrap_or_else(|e| panic!("{e}: {context}"))]
            }
            "text/event-stream" => events_of(&String::from_utf8(x.body.clone()).unwrap()),
            _ => vec![Value::String(String::from_utf8(x.body.clone()).unwrap())],
        };
        assert!(!instances.is_empty(), "{context}");
        for instance in &instances {
            let errors = self.schema_errors(&schema, instance);
            assert!(errors.is_empty(), "{context}\n{errors:#?}");
        }
        if let Some(headers) = response["headers"].as_object() {
            for (name, header) in headers {
                let header = self.resolve(header);
                match x.headers.get(name.as_str()) {
                    Some(value) => {
                        let value = Value::String(value.to_str().unwrap().to_owned());
                        let errors = self.schema_errors(&header["schema"], &value);
                        assert!(errors.is_empty(), "header {name}: {context}\n{errors:#?}");
                    }
                    None => assert!(
                        header["required"] != true,
                        "required header {name} missing: {context}"
                    ),
                }
            }
        }
        if documented {
            self.seen
                .insert((x.method.to_ascii_lowercase(), template, status));
        }
    }

    /// Every documented status of every operation that no answer produced.
    pub(crate) fn never_seen(&self) -> Vec<String> {
        let mut missing = Vec::new();
        for (template, item) in self.doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                for status in operation["responses"].as_object().unwrap().keys() {
                    let key = (method.clone(), template.clone(), status.clone());
                    let excused = UNREACHABLE.iter().any(|(m, t, why)| {
                        *m == method && *t == template && why.starts_with(status.as_str())
                    });
                    if status != "default" && !excused && !self.seen.contains(&key) {
                        missing.push(format!("{method} {template} {status}"));
                    }
                }
            }
        }
        missing
    }
}

// ---- events ----

pub(crate) async fn call(app: &App, queue: Option<&dyn WorkQueue>, event: &str) -> Exchange {
    let request = lambda_http::request::from_str(event).expect("event parses");
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let response = api::handle(app, queue, request).await;
    Exchange {
        method,
        path,
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        body: response.body().as_ref().to_vec(),
    }
}

pub(crate) async fn call_stream(app: &'static App, event: &str) -> Exchange {
    let request = lambda_http::request::from_str(event).expect("event parses");
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let response = stream_function::handle(app, None, request).await;
    let (parts, body) = response.into_parts();
    let body = body
        .collect()
        .await
        .expect("stream body")
        .to_bytes()
        .to_vec();
    Exchange {
        method,
        path,
        status: parts.status.as_u16(),
        headers: parts.headers,
        body,
    }
}

pub(crate) fn json_of(x: &Exchange) -> Value {
    serde_json::from_slice(&x.body).unwrap_or(Value::Null)
}

// ---- faults ----

/// The events of a `text/event-stream` body: `{id, event, data}` per frame, as read by a
/// client.
pub(crate) fn events_of(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter(|frame| !frame.trim().is_empty())
        .map(|frame| {
            let mut event = serde_json::Map::new();
            for line in frame.lines() {
                let (field, value) = line.split_once(": ").unwrap_or((line, ""));
                event.insert(field.to_owned(), Value::String(value.to_owned()));
            }
            Value::Object(event)
        })
        .collect()
}
