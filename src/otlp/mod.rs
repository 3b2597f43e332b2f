//! Trace export: every closed `tracing` span of an invocation, sent as OTLP/HTTP protobuf to
//! an OpenTelemetry receiver (in Lambda, the ADOT collector layer on `localhost:4318`, which
//! forwards to AWS X-Ray; or an LLM observability tool such as Arize Phoenix or Langfuse) once,
//! at the end of the invocation.
//!
//! Why not the `opentelemetry` SDK: measured against it (tracing-opentelemetry, a batch span
//! processor, opentelemetry-otlp over HTTP protobuf, the Lambda runtime's OpenTelemetry layer
//! flushing after each invocation), the SDK's `api` bootstrap is larger and, with export on,
//! its cold start 5.5 ms longer (BENCHMARKS.md "Trace export"): its exporter runs reqwest's
//! blocking client on a thread of its own and the flush blocks a runtime thread. This layer
//! sends one awaited request (reqwest, on the app's one TLS stack) before the handler returns
//! (a Lambda is frozen as soon as it does); the wire messages are the OpenTelemetry project's
//! own (`opentelemetry-proto`, encoded by prost).
//!
//! Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` is set ([`crate::entry::logging::init_lambda`],
//! [`settings`]): then no layer is installed and spans cost what they cost without it.
//!
//! Spans and their attributes: a span's fields are its attributes ([`attributes`]); the field
//! `otel.name` replaces its name, `otel.kind = "client"` makes it a client span; a root span's
//! field `traceparent` (W3C `00-<trace>-<span>-<flags>`) makes it a child of that remote span
//! (the API Gateway / Lambda X-Ray context, or the span that queued an SQS message), so one
//! trace holds a suspended and resumed run.

mod attributes;
mod context;
mod encode;
pub(crate) mod metrics;
mod settings;
mod span_data;

pub use context::SpanContext;
pub(crate) use metrics::METRICS_NAMESPACE;
pub use settings::ExportSettings;

use context::{new_span_id, new_trace_id, now_nanos};
use span_data::SpanData;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// Closed spans waiting for the next [`Exporter::flush`], and where to send them.
#[derive(Debug)]
struct Inner {
    /// Where spans go and the client that sends them; `None`: recorded for the GenAI metrics
    /// only ([`metrics`]), and no client is built (building one cost 5 to 10 ms of every
    /// function's cold start with export off: BENCHMARKS.md, "Trace export").
    export: Option<(ExportSettings, reqwest::Client)>,
    closed: Mutex<Vec<SpanData>>,
}

/// Sends the spans closed so far: call [`Exporter::flush`] before an invocation returns.
#[derive(Debug, Clone)]
pub struct Exporter {
    inner: Arc<Inner>,
}

/// The `tracing` layer that records spans for an [`Exporter`].
#[derive(Debug, Clone)]
pub struct OtlpLayer {
    inner: Arc<Inner>,
}

impl Exporter {
    /// An exporter posting to `{endpoint}/v1/traces` (`endpoint` as in
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`, e.g. `http://localhost:4318`) for `service`, and the
    /// layer feeding it.
    pub fn new(endpoint: &str, service: &str) -> (Self, OtlpLayer) {
        Self::with_settings(Some(ExportSettings::new(endpoint, service)))
    }

    /// An exporter with these settings (`None`: spans are recorded and taken by
    /// [`Exporter::take_closed_spans`], never sent), and the layer feeding it.
    pub fn with_settings(settings: Option<ExportSettings>) -> (Self, OtlpLayer) {
        let export = settings.map(|settings| {
            let client = crate::tls::reqwest_builder().build().unwrap_or_default();
            (settings, client)
        });
        let inner = Arc::new(Inner {
            export,
            closed: Mutex::new(Vec::new()),
        });
        (
            Self {
                inner: inner.clone(),
            },
            OtlpLayer { inner },
        )
    }

    /// Takes the spans closed so far (what the next [`Exporter::flush`] would send).
    pub(crate) fn take_closed_spans(&self) -> Vec<SpanData> {
        std::mem::take(
            &mut *self
                .inner
                .closed
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// The names of the spans closed since the last flush, which are dropped unsent (the bench
    /// suite measures recording without the request).
    pub fn take_closed(&self) -> Vec<String> {
        self.take_closed_spans()
            .into_iter()
            .map(|s| s.name)
            .collect()
    }

    /// Sends every span closed so far in one request; a failure is logged, never returned
    /// (tracing must not fail a run).
    pub async fn flush(&self) {
        let spans = self.take_closed_spans();
        self.send(&spans).await;
    }

    /// Sends `spans` in one OTLP/HTTP protobuf request, if export is on.
    pub(crate) async fn send(&self, spans: &[SpanData]) {
        let Some((settings, client)) = &self.inner.export else {
            return;
        };
        if spans.is_empty() {
            return;
        }
        let body = encode::request(settings, spans);
        let mut request = client
            .post(&settings.traces_url)
            .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
            .body(body)
            .timeout(std::time::Duration::from_secs(2));
        for (name, value) in &settings.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let sent = request
            .send()
            .await
            .and_then(reqwest::Response::error_for_status);
        if let Err(e) = sent {
            // The error names the URL and status, never a header (they may hold a key).
            tracing::warn!(error = %e.without_url(), url = %settings.traces_url, spans = spans.len(), "could not export spans");
        }
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for OtlpLayer {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let parent = span
            .parent()
            .and_then(|p| p.extensions().get::<SpanData>().map(|d| d.context));
        let mut data = SpanData {
            context: SpanContext {
                trace_id: parent.map_or_else(new_trace_id, |p| p.trace_id),
                span_id: new_span_id(),
            },
            parent: parent.map(|p| p.span_id),
            name: attrs.metadata().name().to_owned(),
            client: false,
            start: now_nanos(),
            end: 0,
            attributes: Vec::new(),
        };
        attrs.record(&mut data);
        if parent.is_none() {
            if let Some(remote) = data
                .str_attribute("traceparent")
                .and_then(SpanContext::from_traceparent)
            {
                data.context.trace_id = remote.trace_id;
                data.parent = Some(remote.span_id);
            }
        }
        span.extensions_mut().insert(data);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(data) = span.extensions_mut().get_mut::<SpanData>() {
                values.record(data);
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(mut data) = span.extensions_mut().remove::<SpanData>() else {
            return;
        };
        data.end = now_nanos();
        self.inner
            .closed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(data);
    }
}

/// Name of the SQS message attribute (and HTTP header) carrying a W3C trace context.
pub(crate) const TRACEPARENT: &str = "traceparent";

/// The process's exporter, and whether its invocations print GenAI metrics: set once by
/// [`crate::entry::logging::init_lambda`] (metrics on, export when configured) or
/// [`crate::entry::logging::init_cli`] (export only, when configured).
static GLOBAL: OnceLock<(Exporter, bool)> = OnceLock::new();

/// Makes `exporter` the one [`flush`] sends through; with `metrics`, [`flush`] also prints the
/// GenAI metrics of the spans it takes.
pub(crate) fn install(exporter: Exporter, metrics: bool) {
    let _ = GLOBAL.set((exporter, metrics));
}

/// At the end of an invocation (or a CLI command): prints the GenAI metrics of its model and
/// embeddings calls on stdout ([`metrics`]; Lambda only) and sends its spans, if export is on;
/// a no-op when no exporter is installed.
pub(crate) async fn flush() {
    let Some((exporter, metrics)) = GLOBAL.get() else {
        return;
    };
    let spans = exporter.take_closed_spans();
    if *metrics {
        for line in metrics::genai_metrics(&spans, now_ms()) {
            println!("{line}");
        }
    }
    exporter.send(&spans).await;
}

fn now_ms() -> u64 {
    u64::try_from(now_nanos() / 1_000_000).unwrap_or(u64::MAX)
}

/// The W3C form of a Lambda invocation's X-Ray trace context (active tracing), if any.
pub(crate) fn invocation_traceparent(
    invocation: Option<&lambda_runtime::Context>,
) -> Option<String> {
    let header = invocation?.xray_trace_id.as_deref()?;
    SpanContext::from_xray(header).map(SpanContext::traceparent)
}

/// The W3C `traceparent` of the current span, to hand a trace on (an SQS message attribute);
/// `None` when no span is exported.
pub(crate) fn current_traceparent() -> Option<String> {
    tracing::Span::current().with_subscriber(|(id, dispatch)| {
        let registry = dispatch.downcast_ref::<tracing_subscriber::Registry>()?;
        let span = registry.span(id)?;
        let extensions = span.extensions();
        extensions
            .get::<SpanData>()
            .map(|d| d.context.traceparent())
    })?
}
