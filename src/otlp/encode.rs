//! Closed spans as one OTLP `ExportTraceServiceRequest`, protobuf-encoded (the OpenTelemetry
//! project's generated messages, `opentelemetry-proto`, written by prost).

use super::attributes::{exported, AttrValue};
use super::settings::ExportSettings;
use super::span_data::SpanData;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, InstrumentationScope, KeyValue,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{
    span, status, ResourceSpans, ScopeSpans, Span, Status,
};
use prost::Message;

/// The request body for `spans`, under the resource `settings` names.
pub(super) fn request(settings: &ExportSettings, spans: &[SpanData]) -> Vec<u8> {
    let mut resource = vec![key_value(
        "service.name",
        AttrValue::Str(settings.service.clone()),
    )];
    resource.extend(
        settings
            .resource
            .iter()
            .map(|(k, v)| key_value(k, AttrValue::Str(v.clone()))),
    );
    let request = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: resource,
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "bounded-rag".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..InstrumentationScope::default()
                }),
                spans: spans
                    .iter()
                    .map(|s| span(s, settings.capture_content))
                    .collect(),
                ..ScopeSpans::default()
            }],
            ..ResourceSpans::default()
        }],
    };
    request.encode_to_vec()
}

fn span(data: &SpanData, content: bool) -> Span {
    let kind = if data.client {
        span::SpanKind::Client
    } else {
        span::SpanKind::Internal
    };
    let code = if data.failed() {
        status::StatusCode::Error
    } else {
        status::StatusCode::Ok
    };
    Span {
        trace_id: data.context.trace_id.to_be_bytes().to_vec(),
        span_id: data.context.span_id.to_be_bytes().to_vec(),
        parent_span_id: data
            .parent
            .map(|p| p.to_be_bytes().to_vec())
            .unwrap_or_default(),
        name: data.name.clone(),
        kind: kind as i32,
        start_time_unix_nano: u64::try_from(data.start).unwrap_or(u64::MAX),
        end_time_unix_nano: u64::try_from(data.end).unwrap_or(u64::MAX),
        attributes: exported(&data.attributes, content)
            .into_iter()
            .map(|(k, v)| key_value(&k, v))
            .collect(),
        status: Some(Status {
            code: code as i32,
            ..Status::default()
        }),
        ..Span::default()
    }
}

fn key_value(key: &str, value: AttrValue) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(any(value)),
        ..KeyValue::default()
    }
}

fn any(value: AttrValue) -> AnyValue {
    let value = match value {
        AttrValue::Str(s) => any_value::Value::StringValue(s),
        AttrValue::Int(n) => any_value::Value::IntValue(n),
        AttrValue::Double(x) => any_value::Value::DoubleValue(x),
        AttrValue::Bool(b) => any_value::Value::BoolValue(b),
        AttrValue::StrArray(items) => any_value::Value::ArrayValue(ArrayValue {
            values: items.into_iter().map(|s| any(AttrValue::Str(s))).collect(),
        }),
    };
    AnyValue { value: Some(value) }
}
