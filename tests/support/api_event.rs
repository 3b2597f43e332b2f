//! API Gateway (HTTP API) events for the handlers, edited from the events of `events/`: a body, a
//! header or a method replaced, and the `GET` / cancel / `/threads` requests of the IAM caller of
//! `events/apigw-runs-get.json`.

use serde_json::{json, Value};

const RUNS_GET: &str = include_str!("../../events/apigw-runs-get.json");
const RUNS_CANCEL: &str = include_str!("../../events/apigw-runs-cancel.json");

/// A `/threads` request of the IAM caller of `events/apigw-runs-get.json`.
pub(crate) fn thread_event(method: &str, path: &str, query: &[(&str, &str)]) -> String {
    let mut v: Value = serde_json::from_str(RUNS_GET).unwrap();
    v["rawPath"] = json!(path);
    v["requestContext"]["http"]["method"] = json!(method);
    v["requestContext"]["http"]["path"] = json!(path);
    v["routeKey"] = json!(format!("{method} {path}"));
    v.as_object_mut().unwrap().remove("pathParameters");
    if !query.is_empty() {
        let map: serde_json::Map<String, Value> = query
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        v["queryStringParameters"] = Value::Object(map);
        let raw: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        v["rawQueryString"] = json!(raw.join("&"));
    }
    v.to_string()
}

/// Replaces the event's JSON body.
pub(crate) fn with_body(event: &str, body: &str) -> String {
    let mut v: Value = serde_json::from_str(event).unwrap();
    v["body"] = Value::String(body.to_owned());
    v["headers"]["content-length"] = Value::String(body.len().to_string());
    v.to_string()
}

/// Adds (or replaces) a request header.
pub(crate) fn with_header(event: &str, name: &str, value: &str) -> String {
    let mut v: Value = serde_json::from_str(event).unwrap();
    v["headers"][name] = Value::String(value.to_owned());
    v.to_string()
}

/// `GET /workflow/runs/{run_id}` of the IAM caller.
pub(crate) fn get_event(run_id: &str) -> String {
    RUNS_GET.replace("00000000-0000-4000-8000-000000000001", run_id)
}

/// `GET {path}?{query}` as API Gateway sends it (the IAM caller of `apigw-runs-get.json`).
pub(crate) fn get_path_event(route: &str, path: &str, query: &[(&str, &str)]) -> String {
    let mut v: Value = serde_json::from_str(RUNS_GET).unwrap();
    let raw: Vec<String> = query.iter().map(|(k, val)| format!("{k}={val}")).collect();
    v["routeKey"] = json!(format!("GET {route}"));
    v["requestContext"]["routeKey"] = json!(format!("GET {route}"));
    v["rawPath"] = json!(path);
    v["requestContext"]["http"]["path"] = json!(path);
    v["rawQueryString"] = json!(raw.join("&"));
    if !query.is_empty() {
        let params: serde_json::Map<String, Value> = query
            .iter()
            .map(|(k, val)| ((*k).to_owned(), json!(val)))
            .collect();
        v["queryStringParameters"] = Value::Object(params);
    }
    v.to_string()
}

/// `GET /workflow/runs/{run_id}/steps?{query}`.
pub(crate) fn steps_event(run_id: &str, query: &[(&str, &str)]) -> String {
    let path = format!("/workflow/runs/{run_id}/steps");
    get_path_event("/workflow/runs/{run_id}/steps", &path, query)
}

/// `GET /workflow/runs?{query}`.
pub(crate) fn list_event(query: &[(&str, &str)]) -> String {
    get_path_event("/workflow/runs", "/workflow/runs", query)
}

/// `POST /workflow/runs/{run_id}/cancel` of the IAM caller.
pub(crate) fn cancel_event(run_id: &str) -> String {
    RUNS_CANCEL.replace("00000000-0000-4000-8000-000000000001", run_id)
}

/// Replaces the request's method.
pub(crate) fn with_method(event: &str, method: &str) -> String {
    let mut v: Value = serde_json::from_str(event).unwrap();
    v["requestContext"]["http"]["method"] = method.into();
    v.to_string()
}
