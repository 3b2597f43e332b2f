//! A chat model's reply streamed into a sink that keeps every delta, in order: the one way the
//! model client tests (`llm_openai_stream.rs`, `llm_bedrock.rs`, `llm_reasoning.rs`) read a
//! stream, through the client itself or through `write_answer` with its meter.

use bounded_rag::llm::{write_answer, ChatModel, ChatRequest, Completion, LlmError};
use bounded_rag::usage::Meter;
use std::sync::Mutex;

/// Streams `request` and returns the result with every delta the sink received, in order.
pub(crate) async fn stream(
    model: &dyn ChatModel,
    request: &ChatRequest<'_>,
) -> (Result<Completion, LlmError>, Vec<String>) {
    let deltas = Mutex::new(Vec::new());
    let sink = |delta: &str| deltas.lock().unwrap().push(delta.to_owned());
    let result = model.complete_streaming(request, &sink).await;
    (result, deltas.into_inner().unwrap())
}

/// `write_answer` streamed: the written text, every delta the sink got, and the meter.
pub(crate) async fn streamed_answer(
    model: &dyn ChatModel,
    request: &ChatRequest<'_>,
) -> (Result<String, LlmError>, Vec<String>, Meter) {
    let meter = Meter::default();
    let deltas = Mutex::new(Vec::new());
    let sink = |delta: &str| deltas.lock().unwrap().push(delta.to_owned());
    let written = write_answer(model, request, &meter, Some(&sink)).await;
    (written.map(|w| w.text), deltas.into_inner().unwrap(), meter)
}
