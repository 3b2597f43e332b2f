//! Span export (`otlp_export.rs`), in a test binary of its own. What it checks is process-wide:
//! the tracing dispatcher its spans reach and the call sites' cached interest. In the shared
//! integration binary, another test's runs on threads without a subscriber (`openapi`'s, run
//! at the same time) left most of this test's spans unrecorded — only the retrieval span
//! reached the exporter — so it passed alone and failed beside them.

mod support;

mod otlp_export;
