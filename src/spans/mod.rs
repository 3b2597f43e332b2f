//! The target of the spans that exist for trace export only (step, model call, retrieval, web
//! search, DynamoDB and SQS calls): the log layers never listen to it, so with export off
//! (no `OTEL_EXPORTER_OTLP_ENDPOINT`, always outside Lambda) no subscriber is interested in
//! these call sites and each costs one cached-interest check
//! ([`crate::entry::logging::lambda_subscriber`]; measured by `benches/engine.rs`, group
//! `tracing`). The `request`, `sqs_record` and `run` spans keep the crate's own target: their
//! fields (`run_id`) are on every log line.
//!
//! What the run, model-call, embeddings, retrieval and tool spans carry, in the OpenTelemetry
//! GenAI conventions: [`crate::genai`].

/// Target of export-only spans. `#[tracing::instrument]` takes a literal, so
/// `store/dynamodb.rs` spells it out; a unit test keeps the two equal.
pub(crate) const TARGET: &str = "bounded_rag::spans";

/// The span of one workflow step: the node, its run, the how-many-th run of this node in the
/// run (`attempt`); `tokens` and `outcome` are recorded when the step ends.
pub fn step(node: &'static str, run_id: &str, attempt: usize) -> tracing::Span {
    tracing::info_span!(
        target: TARGET,
        "step",
        otel.name = node,
        run_id = %run_id,
        node,
        attempt,
        tokens = tracing::field::Empty,
        outcome = tracing::field::Empty,
    )
}

#[cfg(test)]
mod tests {
    use super::TARGET;

    #[test]
    fn every_instrumented_dynamodb_call_uses_the_export_target() {
        let source = include_str!("../store/dynamodb/mod.rs");
        let instrumented = source.matches("#[tracing::instrument(").count();
        assert!(instrumented >= 3, "{instrumented}");
        let with_target = source.matches(&format!("target = \"{TARGET}\"")).count();
        assert_eq!(with_target, instrumented);
    }
}
