//! Where and how spans are exported, from the OpenTelemetry SDK's standard environment
//! variables, so that any OTLP receiver is configured as its own documentation says:
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, taken as is),
//! `OTEL_EXPORTER_OTLP_HEADERS` (`key=value,...`, e.g. Langfuse's `Authorization=Basic ...`),
//! `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` (e.g. Phoenix's
//! `openinference.project.name=...`) and `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`.

use percent_encoding::percent_decode_str;

/// An exporter's settings.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ExportSettings {
    /// The URL spans are posted to (`…/v1/traces`).
    pub traces_url: String,
    /// Headers sent with each export (they may hold a key: never logged).
    pub headers: Vec<(String, String)>,
    /// Resource attributes besides `service.name`.
    pub resource: Vec<(String, String)>,
    /// `service.name`.
    pub service: String,
    /// Export prompts, completions, queries and passages (off by default: they may hold
    /// personal data).
    pub capture_content: bool,
}

impl std::fmt::Debug for ExportSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ExportSettings")
            .field("traces_url", &self.traces_url)
            .field("header_names", &header_names)
            .field("resource", &self.resource)
            .field("service", &self.service)
            .field("capture_content", &self.capture_content)
            .finish()
    }
}

impl ExportSettings {
    /// Settings for posting to `endpoint` (a base URL such as `http://localhost:4318`) for
    /// `service`, nothing else set.
    pub fn new(endpoint: &str, service: &str) -> Self {
        Self {
            traces_url: format!("{}/v1/traces", endpoint.trim_end_matches('/')),
            service: service.to_owned(),
            ..Self::default()
        }
    }

    /// The settings the environment gives, read through `var`; `None` when no endpoint is set
    /// (export off). `default_service` names the service when `OTEL_SERVICE_NAME` does not.
    pub fn from_env(var: impl Fn(&str) -> Option<String>, default_service: &str) -> Option<Self> {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let traces_url = match set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(url) => url,
            None => Self::new(&set("OTEL_EXPORTER_OTLP_ENDPOINT")?, "").traces_url,
        };
        Some(Self {
            traces_url,
            headers: set("OTEL_EXPORTER_OTLP_HEADERS")
                .map(|v| pairs(&v))
                .unwrap_or_default(),
            resource: set("OTEL_RESOURCE_ATTRIBUTES")
                .map(|v| pairs(&v))
                .unwrap_or_default()
                .into_iter()
                .filter(|(k, _)| k != "service.name")
                .collect(),
            service: set("OTEL_SERVICE_NAME").unwrap_or_else(|| default_service.to_owned()),
            capture_content: set("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
        })
    }
}

/// `key=value` pairs separated by commas, each side trimmed and percent-decoded (the W3C
/// baggage form the OpenTelemetry variables use); a pair without `=` or key is skipped.
fn pairs(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            let decode = |s: &str| {
                percent_decode_str(s.trim())
                    .decode_utf8_lossy()
                    .into_owned()
            };
            let key = decode(key);
            (!key.is_empty()).then(|| (key, decode(value)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn the_standard_variables_configure_the_export() {
        assert_eq!(ExportSettings::from_env(env(&[]), "fn"), None);
        let s = ExportSettings::from_env(
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:6006/"),
                (
                    "OTEL_EXPORTER_OTLP_HEADERS",
                    "Authorization=Basic%20abc, x-tenant = t1,bad",
                ),
                (
                    "OTEL_RESOURCE_ATTRIBUTES",
                    "openinference.project.name=rag,service.name=x",
                ),
                ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "TRUE"),
            ]),
            "fn",
        )
        .unwrap();
        assert_eq!(s.traces_url, "http://127.0.0.1:6006/v1/traces");
        assert_eq!(
            s.headers,
            [
                ("Authorization".to_owned(), "Basic abc".to_owned()),
                ("x-tenant".to_owned(), "t1".to_owned())
            ]
        );
        assert_eq!(
            s.resource,
            [("openinference.project.name".to_owned(), "rag".to_owned())]
        );
        assert_eq!(s.service, "fn");
        assert!(s.capture_content);
        assert!(
            !format!("{s:?}").contains("abc"),
            "a header's value is never shown"
        );
        let s = ExportSettings::from_env(
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a"),
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "https://cloud.example/api/otel/v1/traces",
                ),
                ("OTEL_SERVICE_NAME", "svc"),
            ]),
            "fn",
        )
        .unwrap();
        assert_eq!(s.traces_url, "https://cloud.example/api/otel/v1/traces");
        assert_eq!(s.service, "svc");
        assert!(!s.capture_content);
    }
}
