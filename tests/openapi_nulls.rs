//! `null` in every request field agrees with `openapi.yaml`: for every operation with a JSON
//! body, each property of its schema (and of the objects nested in it, such as every variant of
//! `filters`) is sent as `null` in an otherwise valid body, through the real handlers
//! (`entry::api::handle`, and `entry::stream_function::handle` for `POST /workflow/run`). Where
//! the schema accepts the body, the answer must be the operation's success status; everywhere
//! else, `400` `invalid_request` whose `field` names that property. The schema decides, not a
//! list kept here, so a field whose contract and handler disagree fails, whichever side is
//! wrong (issue 37: `filters: null` was answered `200` while the contract refused it).

use crate::support;

use bounded_rag::entry::App;
use bounded_rag::runs::{MemoryQueue, WorkQueue};
use bounded_rag::store::MemoryStore;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::sync::Arc;
use support::api_event::with_body;
use support::app::app;
use support::llm_server::{Script, ScriptedLlm};
use support::openapi::{call, call_stream, json_of, Exchange, Spec};
use support::web_server::ScriptedWeb;

const RUN: &str = include_str!("../events/apigw-run.json");
const RUNS_START: &str = include_str!("../events/apigw-runs-start.json");

/// How a test reaches an operation with a JSON body.
#[derive(Debug, Clone, Copy)]
enum Handler {
    /// The `api` function, with or without a work queue.
    Api { queue: bool },
    /// The `stream` function (server-sent events on success, JSON errors).
    Stream,
    /// The `api` function's fork route, on a run of `event` made first.
    Fork,
    /// The `api` function's resume route, on a run made first that waits (asks back).
    Resume,
}

/// Every operation with a JSON body: its `operationId`, the event that calls it, the handlers
/// that serve it, and the status of its success for a fresh request.
const OPERATIONS: &[(&str, &str, Handler, u16)] = &[
    ("runWorkflow", RUN, Handler::Api { queue: false }, 200),
    ("runWorkflow", RUN, Handler::Stream, 200),
    ("startRun", RUNS_START, Handler::Api { queue: true }, 202),
    ("forkRun", RUN, Handler::Fork, 200),
    ("resumeRun", RUN, Handler::Resume, 200),
];

/// One property sent as `null`: its dotted path (as the error's `field` names it), the valid
/// body it is taken from, and that body with the property `null`.
#[derive(Debug)]
struct Site {
    field: String,
    base: Value,
    nulled: Value,
}

/// The handlers of one test, over the scripted model.
struct Handlers {
    api: App,
    /// Asks back when a question's subject is not named (`CLARIFY`).
    asking: App,
    /// Waits for approval of its web search, with its own scripted servers.
    approving: (App, ScriptedLlm, ScriptedWeb),
    stream: &'static App,
    queue: MemoryQueue,
}

impl Handlers {
    async fn send(&self, handler: Handler, event: &str, body: &Value) -> Exchange {
        let event = with_body(event, &body.to_string());
        match handler {
            Handler::Api { queue: false } => call(&self.api, None, &event).await,
            Handler::Api { queue: true } => {
                call(&self.api, Some(&self.queue as &dyn WorkQueue), &event).await
            }
            Handler::Stream => call_stream(self.stream, &event).await,
            Handler::Fork => {
                let done = call(&self.api, None, RUN).await;
                let run_id = json_of(&done)["run_id"].as_str().unwrap().to_owned();
                let fork = crate::openapi_fork::fork_event(&run_id, &body.to_string());
                call(&self.api, None, &fork).await
            }
            Handler::Resume => {
                // A run asking what the body answers: a clarification or an approval.
                let (app, question) = if body.get("approve").is_some() {
                    (&self.approving.0, "What does durian cost today?")
                } else {
                    (&self.asking, "How do I treat it?")
                };
                let ask = with_body(RUN, &json!({ "question": question }).to_string());
                let waiting = json_of(&call(app, None, &ask).await);
                assert_eq!(waiting["status"], "waiting", "{waiting}");
                let run_id = waiting["run_id"].as_str().unwrap();
                let resume = crate::openapi_resume::resume_event(run_id, &body.to_string());
                call(app, None, &resume).await
            }
        }
    }
}

/// The schema's alternatives that are objects with properties (through `$ref`, `oneOf` and
/// `anyOf`): the shapes whose own properties are walked too.
fn object_variants<'a>(spec: &'a Spec, schema: &'a Value) -> Vec<&'a Value> {
    let schema = spec.resolve(schema);
    let branches = schema.get("oneOf").or_else(|| schema.get("anyOf"));
    if let Some(branches) = branches.and_then(Value::as_array) {
        return branches
            .iter()
            .flat_map(|b| object_variants(spec, b))
            .collect();
    }
    if schema.get("properties").is_some_and(Value::is_object) {
        vec![schema]
    } else {
        vec![]
    }
}

/// The schema's types, `null` last (`type: [string, "null"]` or `type: string`).
fn types(schema: &Value) -> Vec<&str> {
    let mut types: Vec<&str> = match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ if schema.get("properties").is_some() => vec!["object"],
        _ => vec![],
    };
    types.sort_by_key(|t| *t == "null");
    types
}

/// The smallest instance of `schema` this walk needs: required properties only (then optional
/// ones in order until `minProperties`), the first enum value, the first alternative, the
/// lowest number. Checked against the schema by the test, so a wrong guess fails loudly.
fn minimal(spec: &Spec, schema: &Value) -> Value {
    let schema = spec.resolve(schema);
    if let Some(first) = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(|b| b.get(0))
    {
        return minimal(spec, first);
    }
    if let Some(values) = schema["enum"].as_array() {
        return values.iter().find(|v| !v.is_null()).cloned().unwrap();
    }
    let bound = |name: &str, or: i64| schema[name].as_i64().unwrap_or(or);
    match types(schema).first().copied() {
        Some("object") => {
            let properties = schema["properties"].as_object().unwrap();
            let required: BTreeSet<&str> = schema["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut object = Map::new();
            for (name, property) in properties {
                if required.contains(name.as_str()) {
                    object.insert(name.clone(), minimal(spec, property));
                }
            }
            for (name, property) in properties {
                if object.len() >= bound("minProperties", 0) as usize {
                    break;
                }
                if !object.contains_key(name) {
                    object.insert(name.clone(), minimal(spec, property));
                }
            }
            Value::Object(object)
        }
        Some("string") => json!("a".repeat(bound("minLength", 1).max(1) as usize)),
        Some("integer") => json!(bound("minimum", 1)),
        Some("number") => json!(bound("minimum", 0)),
        Some("boolean") => json!(true),
        Some("array") => {
            let item = minimal(spec, &schema["items"]);
            Value::Array(vec![item; bound("minItems", 0) as usize])
        }
        _ => Value::Null,
    }
}

/// Sets the value at `path` (object keys) inside `body`.
fn set(body: &mut Value, path: &[String], value: Value) {
    let (last, parents) = path.split_last().unwrap();
    let mut target = body;
    for key in parents {
        target = &mut target[key.as_str()];
    }
    target[last.as_str()] = value;
}

/// Every property of the object `schema` at `path` in `base`, and of the objects nested in
/// them, as a [`Site`]. Arrays are not entered (their items are `Filter`s again: the walk of
/// `filters` already covers that shape).
fn walk(spec: &Spec, schema: &Value, base: &Value, path: &[String], sites: &mut Vec<Site>) {
    let schema = spec.resolve(schema);
    for (name, property) in schema["properties"].as_object().unwrap() {
        let here: Vec<String> = path.iter().cloned().chain([name.clone()]).collect();
        let mut nulled = base.clone();
        set(&mut nulled, &here, Value::Null);
        sites.push(Site {
            field: here.join("."),
            base: base.clone(),
            nulled,
        });
        for variant in object_variants(spec, property) {
            let mut nested = base.clone();
            set(&mut nested, &here, minimal(spec, variant));
            walk(spec, variant, &nested, &here, sites);
        }
    }
}

#[tokio::test]
async fn null_in_each_request_field_is_accepted_exactly_where_openapi_yaml_allows_it() {
    let spec = Spec::load();
    let llm = ScriptedLlm::start(Script::defaults()).await;
    let handlers = Handlers {
        api: app(&llm, Arc::new(MemoryStore::new()), true),
        asking: crate::openapi_resume::asking_app(&llm),
        approving: crate::openapi_resume::approving_app().await,
        stream: Box::leak(Box::new(app(&llm, Arc::new(MemoryStore::new()), false))),
        queue: MemoryQueue::default(),
    };

    // Every operation with a JSON body is driven here, so a new one cannot slip past.
    let mut with_body_ops = BTreeSet::new();
    for item in spec.doc["paths"].as_object().unwrap().values() {
        for operation in item.as_object().unwrap().values() {
            if operation.get("requestBody").is_some() {
                with_body_ops.insert(operation["operationId"].as_str().unwrap().to_owned());
            }
        }
    }
    let driven: BTreeSet<String> = OPERATIONS.iter().map(|o| o.0.to_owned()).collect();
    assert_eq!(
        driven, with_body_ops,
        "OPERATIONS must list every operation with a body"
    );

    let mut failures = Vec::new();
    let (mut accepted, mut refused) = (BTreeSet::new(), BTreeSet::new());
    for &(operation_id, event, handler, success) in OPERATIONS {
        let operation = spec.doc["paths"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|item| item.as_object().unwrap().values())
            .find(|op| op["operationId"] == operation_id)
            .unwrap();
        assert!(
            operation["responses"].get(success.to_string()).is_some(),
            "{operation_id}: {success} is not documented"
        );
        let body = spec.resolve(&operation["requestBody"]);
        let schema = spec.resolve(&body["content"]["application/json"]["schema"]);
        let mut sites = Vec::new();
        // A body that is one of several shapes (a resume's answer or approval): each walked.
        for variant in object_variants(&spec, schema) {
            walk(&spec, variant, &minimal(&spec, variant), &[], &mut sites);
        }

        // The bases are valid and succeed: the null is the only thing wrong with a body.
        let bases: BTreeSet<String> = sites.iter().map(|s| s.base.to_string()).collect();
        for base in &bases {
            let base: Value = serde_json::from_str(base).unwrap();
            let errors = spec.schema_errors(schema, &base);
            assert!(
                errors.is_empty(),
                "{operation_id}: base {base}: {errors:#?}"
            );
            let answer = handlers.send(handler, event, &base).await;
            assert_eq!(
                answer.status,
                success,
                "{operation_id} ({handler:?}): base {base}: {:?}",
                json_of(&answer)
            );
        }

        for site in &sites {
            let allowed = spec.schema_errors(schema, &site.nulled).is_empty();
            let answer = handlers.send(handler, event, &site.nulled).await;
            let got = json_of(&answer);
            // (The first characters of the answer say enough; a run's whole body is long.)
            let shown: String = got.to_string().chars().take(300).collect();
            let ok = if allowed {
                accepted.insert(site.field.clone());
                answer.status == success
            } else {
                refused.insert(site.field.clone());
                answer.status == 400
                    && got["error"] == "invalid_request"
                    && got["field"] == site.field.as_str()
            };
            if !ok {
                let want = if allowed {
                    format!("{success}")
                } else {
                    format!("400 naming `{}`", site.field)
                };
                failures.push(format!(
                    "{operation_id} ({handler:?}) {}: want {want}, got {} {shown}",
                    site.nulled, answer.status
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "contract and handler disagree:\n{}",
        failures.join("\n")
    );
    // The walk reached the optional fields, `filters` and the parts of every filter shape.
    for field in ["filters", "thread_id", "max_tokens"] {
        assert!(accepted.contains(field), "{field} walked: {accepted:?}");
    }
    for field in [
        "question",
        "mode",
        "filters.equals.value",
        "filters.range.gte",
        "filters.and",
    ] {
        assert!(refused.contains(field), "{field} walked: {refused:?}");
    }
}
