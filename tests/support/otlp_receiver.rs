//! A loopback OTLP/HTTP receiver: decodes every protobuf `ExportTraceServiceRequest` it is
//! posted (with the OpenTelemetry project's generated messages, as a collector does) and keeps
//! each span as JSON — `traceId`, `spanId`, `parentSpanId` (hex), `name`, `kind` (`client` or
//! `internal`), `error` (status), `attributes` (key → value; arrays as arrays) and `resource`
//! (its resource's attributes) — and every raw body, to search for what must never be sent.

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use prost::Message;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};

/// What the receiver was sent.
#[derive(Debug, Default)]
pub struct Received {
    /// Every span, in arrival order.
    pub spans: Vec<Value>,
    /// Every request body, as sent.
    pub bodies: Vec<Vec<u8>>,
    /// Every request's headers.
    pub headers: Vec<HeaderMap>,
}

/// A running receiver.
pub struct OtlpReceiver {
    /// Its base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub url: String,
    received: Arc<Mutex<Received>>,
}

impl OtlpReceiver {
    /// Starts one on a free loopback port.
    pub async fn start() -> Self {
        let received = Arc::new(Mutex::new(Received::default()));
        let kept = received.clone();
        let app = Router::new().route(
            "/v1/traces",
            post(move |headers: HeaderMap, body: Bytes| {
                let kept = kept.clone();
                async move {
                    if headers.get("content-type").map(|v| v.as_bytes())
                        != Some(b"application/x-protobuf")
                    {
                        return StatusCode::UNSUPPORTED_MEDIA_TYPE;
                    }
                    let Ok(request) = ExportTraceServiceRequest::decode(body.as_ref()) else {
                        return StatusCode::BAD_REQUEST;
                    };
                    let mut kept = kept.lock().unwrap();
                    for rs in request.resource_spans {
                        let resource =
                            attributes(&rs.resource.map(|r| r.attributes).unwrap_or_default());
                        for ss in rs.scope_spans {
                            for span in ss.spans {
                                kept.spans.push(json!({
                                    "traceId": hex(&span.trace_id),
                                    "spanId": hex(&span.span_id),
                                    "parentSpanId": (!span.parent_span_id.is_empty())
                                        .then(|| hex(&span.parent_span_id)),
                                    "name": span.name,
                                    "kind": if span.kind == 3 { "client" } else { "internal" },
                                    "error": span.status.is_some_and(|s| s.code == 2),
                                    "attributes": attributes(&span.attributes),
                                    "resource": resource,
                                }));
                            }
                        }
                    }
                    kept.bodies.push(body.to_vec());
                    kept.headers.push(headers);
                    StatusCode::OK
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { url, received }
    }

    /// Takes what was received so far.
    pub fn take(&self) -> Received {
        std::mem::take(&mut *self.received.lock().unwrap())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attributes(kvs: &[KeyValue]) -> Value {
    let map: Map<String, Value> = kvs
        .iter()
        .map(|kv| (kv.key.clone(), kv.value.as_ref().map_or(Value::Null, value)))
        .collect();
    Value::Object(map)
}

fn value(v: &AnyValue) -> Value {
    match &v.value {
        Some(any_value::Value::StringValue(s)) => json!(s),
        Some(any_value::Value::IntValue(n)) => json!(n),
        Some(any_value::Value::DoubleValue(x)) => json!(x),
        Some(any_value::Value::BoolValue(b)) => json!(b),
        Some(any_value::Value::ArrayValue(a)) => a.values.iter().map(value).collect(),
        _ => Value::Null,
    }
}

/// The SQS event that delivers one continuation message (`body`, as the queue was sent it)
/// carrying `handed_on` as its `traceparent` attribute, as the worker receives it.
pub fn continuation(
    body: String,
    handed_on: bounded_rag::otlp::SpanContext,
) -> aws_lambda_events::event::sqs::SqsEvent {
    serde_json::from_value(json!({ "Records": [{
        "messageId": "m1", "body": body, "eventSource": "aws:sqs",
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {"traceparent": {"stringValue": handed_on.traceparent(), "dataType": "String"}},
    }]}))
    .unwrap()
}
