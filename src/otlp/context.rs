//! Trace and span ids: W3C `traceparent` and X-Ray headers, and new ids.

use rand::Rng;
use std::time::{SystemTime, UNIX_EPOCH};

/// A 128-bit trace id and the 64-bit id of a span in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanContext {
    /// Trace id.
    pub trace_id: u128,
    /// Span id.
    pub span_id: u64,
}

impl SpanContext {
    /// Reads a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`).
    pub(crate) fn from_traceparent(value: &str) -> Option<Self> {
        let mut parts = value.trim().split('-');
        let (_version, trace, span) = (parts.next()?, parts.next()?, parts.next()?);
        let trace_id = u128::from_str_radix(trace, 16).ok().filter(|t| *t != 0)?;
        let span_id = u64::from_str_radix(span, 16).ok().filter(|s| *s != 0)?;
        (trace.len() == 32 && span.len() == 16).then_some(Self { trace_id, span_id })
    }

    /// Reads an X-Ray trace header (`Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=1`), as
    /// Lambda gives it for an invocation with active tracing.
    pub(crate) fn from_xray(value: &str) -> Option<Self> {
        let field = |name: &str| {
            value
                .split(';')
                .find_map(|kv| kv.trim().strip_prefix(name)?.strip_prefix('='))
        };
        let root = field("Root")?.strip_prefix("1-")?.replace('-', "");
        let trace_id = u128::from_str_radix(&root, 16).ok()?;
        let span_id = u64::from_str_radix(field("Parent")?, 16).ok()?;
        (root.len() == 32).then_some(Self { trace_id, span_id })
    }

    /// As a W3C `traceparent`, sampled.
    pub fn traceparent(self) -> String {
        format!("00-{:032x}-{:016x}-01", self.trace_id, self.span_id)
    }
}

/// A new trace id that X-Ray accepts: its first 32 bits are the current Unix time in seconds.
pub(super) fn new_trace_id() -> u128 {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    (u128::from(secs as u32) << 96) | (rand::rng().random::<u128>() >> 32)
}

pub(super) fn new_span_id() -> u64 {
    rand::rng().random_range(1..=u64::MAX)
}

pub(super) fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_headers_read_and_write() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let ctx = SpanContext::from_traceparent(tp).unwrap();
        assert_eq!(ctx.traceparent(), tp);
        assert_eq!(SpanContext::from_traceparent("00-0-0-01"), None);
        let xray = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
        let ctx = SpanContext::from_xray(xray).unwrap();
        assert_eq!(
            ctx.traceparent(),
            "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01"
        );
        let id = new_trace_id();
        let secs = (id >> 96) as u64;
        assert!(secs > 1_700_000_000, "{id:x}");
    }
}
