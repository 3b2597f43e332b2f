//! The spans of model calls, embeddings, retrievals and tools, in the OpenTelemetry GenAI
//! semantic conventions (`gen_ai.*`): what LLM observability tools (Phoenix, Langfuse, Datadog
//! LLM Observability, CloudWatch's generative-AI observability) read. The exporter adds
//! OpenInference's span kind where the conventions have no word ([`crate::otlp`]).
//!
//! Text a person wrote or a model generated (prompts, completions, queries, passages) is
//! recorded in the `CONTENT` attributes only: the exporter drops them unless content capture is
//! on (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`). No span carries a key or a
//! header.

use tracing::field::Empty;
use tracing::Span;

/// The target of the model and embeddings calls' spans, under [`crate::spans::TARGET`]: the functions
/// record them even with export off, for their GenAI metrics
/// ([`crate::entry::logging::init_lambda`]).
pub(crate) const TARGET: &str = "bounded_rag::spans::genai";

/// `gen_ai.operation.name` of a chat completion.
pub(crate) const CHAT: &str = "chat";
/// `gen_ai.operation.name` of an embeddings call.
pub(crate) const EMBEDDINGS: &str = "embeddings";
/// `gen_ai.operation.name` of a knowledge-base search.
pub(crate) const RETRIEVAL: &str = "retrieval";
/// `gen_ai.operation.name` of a tool's call (web search).
pub(crate) const EXECUTE_TOOL: &str = "execute_tool";
/// `gen_ai.operation.name` of a whole run.
pub(crate) const INVOKE_WORKFLOW: &str = "invoke_workflow";

/// `gen_ai.workflow.name` of every run: the adaptive RAG graph.
pub(crate) const WORKFLOW: &str = "bounded-rag";

/// Attributes holding text a person wrote or a model generated: exported only with content
/// capture on.
pub const CONTENT: &[&str] = &[
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.retrieval.query.text",
    "input.value",
    "output.value",
];

/// The GenAI provider name (`gen_ai.provider.name`) of this crate's provider names: the
/// conventions' well-known values where one applies.
pub(crate) fn provider_name(provider: &str) -> &str {
    match provider {
        "bedrock" => "aws.bedrock",
        other => other,
    }
}

/// True when tracing would keep `span`'s fields: text worth a copy is recorded only then.
fn wanted(span: &Span) -> bool {
    !span.is_disabled()
}

/// The span of one model call: `chat {model}`, a client span. Its usage, finish reason and
/// reply are recorded by [`record_reply`].
pub(crate) fn chat(provider: &str, model: &str, task: &str, max_tokens: u32, stream: bool) -> Span {
    tracing::info_span!(
        target: TARGET,
        "model",
        otel.name = %format_args!("{CHAT} {model}"),
        otel.kind = "client",
        gen_ai.operation.name = CHAT,
        gen_ai.provider.name = provider_name(provider),
        gen_ai.request.model = model,
        gen_ai.request.max_tokens = max_tokens,
        gen_ai.request.stream = stream,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.reasoning.output_tokens = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        bounded_rag.task = task,
        bounded_rag.cache_hit = Empty,
        bounded_rag.tokens_estimated = Empty,
        error.type = Empty,
        outcome = Empty,
    )
}

/// What one model call cost and said, for [`record_reply`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reply<'a> {
    /// Prompt tokens (reported, else estimated).
    pub input_tokens: u64,
    /// Completion tokens, reasoning included.
    pub output_tokens: u64,
    /// Of those, the thinking.
    pub reasoning_tokens: u64,
    /// The tokens are an estimate (the provider reported none).
    pub estimated: bool,
    /// Served from the response cache: no model was called.
    pub cache_hit: bool,
    /// `stop` or `length`.
    pub finish_reason: &'static str,
    /// The reply's content.
    pub content: &'a str,
}

/// Records the messages sent (as the conventions' JSON: role and text parts) on a chat span.
pub(crate) fn record_messages<'a>(span: &Span, messages: impl Iterator<Item = (&'a str, &'a str)>) {
    if !wanted(span) {
        return;
    }
    let messages: Vec<_> = messages
        .map(|(role, text)| {
            serde_json::json!({"role": role, "parts": [{"type": "text", "content": text}]})
        })
        .collect();
    span.record(
        "gen_ai.input.messages",
        serde_json::Value::Array(messages).to_string(),
    );
}

/// Records a reply's usage, finish reason and content on its chat span.
pub(crate) fn record_reply(span: &Span, reply: &Reply<'_>) {
    span.record("gen_ai.usage.input_tokens", reply.input_tokens);
    span.record("gen_ai.usage.output_tokens", reply.output_tokens);
    if reply.reasoning_tokens > 0 {
        span.record(
            "gen_ai.usage.reasoning.output_tokens",
            reply.reasoning_tokens,
        );
    }
    span.record("bounded_rag.tokens_estimated", reply.estimated);
    span.record("bounded_rag.cache_hit", reply.cache_hit);
    span.record("gen_ai.response.finish_reasons", reply.finish_reason);
    if wanted(span) {
        let output = serde_json::json!([{
            "role": "assistant",
            "parts": [{"type": "text", "content": reply.content}],
            "finish_reason": reply.finish_reason,
        }]);
        span.record("gen_ai.output.messages", output.to_string());
    }
}

/// Records how a call ended: `outcome` always, `error.type` (the error's class) on a failure.
pub(crate) fn record_outcome(span: &Span, outcome: &'static str) {
    span.record("outcome", outcome);
    if outcome != "ok" {
        span.record("error.type", outcome);
    }
}

/// The span of one embeddings call: `embeddings {model}`, a client span.
pub(crate) fn embeddings(provider: &str, model: &str, inputs: usize) -> Span {
    tracing::info_span!(
        target: TARGET,
        "embeddings",
        otel.name = %format_args!("{EMBEDDINGS} {model}"),
        otel.kind = "client",
        gen_ai.operation.name = EMBEDDINGS,
        gen_ai.provider.name = provider_name(provider),
        gen_ai.request.model = model,
        gen_ai.embeddings.dimension.count = Empty,
        gen_ai.usage.input_tokens = Empty,
        bounded_rag.inputs = inputs,
        bounded_rag.tokens_estimated = Empty,
        error.type = Empty,
        outcome = Empty,
    )
}

/// The span of one knowledge-base search: `retrieval {data source}`; `mode` is the retrieval
/// mode (`bm25`, `hybrid`). Its documents are recorded by [`record_documents`].
pub(crate) fn retrieval(data_source: &str, mode: &str, top_k: usize, query: &str) -> Span {
    let span = tracing::info_span!(
        target: crate::spans::TARGET,
        "retrieval",
        otel.name = %format_args!("{RETRIEVAL} {data_source}"),
        otel.kind = "client",
        gen_ai.operation.name = RETRIEVAL,
        gen_ai.data_source.id = data_source,
        gen_ai.request.top_k = top_k as f64,
        gen_ai.retrieval.query.text = Empty,
        gen_ai.retrieval.documents = Empty,
        mode,
        error.type = Empty,
        outcome = Empty,
    );
    if wanted(&span) {
        span.record("gen_ai.retrieval.query.text", query);
    }
    span
}

/// The span of one web search: an `execute_tool web_search` span whose results are recorded as
/// documents ([`record_documents`]).
pub(crate) fn web_search(max_results: usize, query: &str) -> Span {
    let span = tracing::info_span!(
        target: crate::spans::TARGET,
        "web_search",
        otel.name = "execute_tool web_search",
        otel.kind = "client",
        gen_ai.operation.name = EXECUTE_TOOL,
        gen_ai.tool.name = "web_search",
        gen_ai.tool.type = "extension",
        gen_ai.request.top_k = max_results as f64,
        gen_ai.retrieval.query.text = Empty,
        gen_ai.retrieval.documents = Empty,
        error.type = Empty,
        outcome = Empty,
    );
    if wanted(&span) {
        span.record("gen_ai.retrieval.query.text", query);
    }
    span
}

/// One retrieved document as a span records it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retrieved<'a> {
    /// Its id in its source.
    pub id: &'a str,
    /// Where it came from (`kb://…` or a URL).
    pub source: &'a str,
    /// The store's score, higher is better.
    pub score: f32,
    /// Its text (exported only with content capture on).
    pub content: &'a str,
}

/// Records the documents a retrieval or web search found, in order, as the conventions'
/// `gen_ai.retrieval.documents` (`id`, `score`, `metadata.source` and `content`; the exporter
/// drops `content` unless content capture is on).
pub(crate) fn record_documents<'a>(span: &Span, documents: impl Iterator<Item = Retrieved<'a>>) {
    if !wanted(span) {
        return;
    }
    let documents: Vec<_> = documents
        .map(|d| {
            serde_json::json!({
                "id": d.id, "score": d.score, "content": d.content,
                "metadata": { "source": d.source },
            })
        })
        .collect();
    span.record(
        "gen_ai.retrieval.documents",
        serde_json::Value::Array(documents).to_string(),
    );
}

/// Records an embeddings call's tokens and its vectors' dimension on its span.
pub(crate) fn record_embedded(span: &Span, usage: &crate::usage::Usage, first: Option<&Vec<f32>>) {
    span.record("gen_ai.usage.input_tokens", usage.prompt_tokens);
    span.record("bounded_rag.tokens_estimated", usage.estimated);
    if let Some(vector) = first {
        span.record("gen_ai.embeddings.dimension.count", vector.len());
    }
}

/// The span of one invocation's share of a run: `invoke_workflow bounded-rag` (the
/// conventions' workflow span), under the `run` span; a suspended and resumed run is one trace
/// of such spans. `conversation` is the thread the run answers a turn of. The question and the
/// answer are recorded with [`record_io`] (exported only with content capture on).
pub(crate) fn workflow(run_id: &str, conversation: Option<&str>) -> tracing::Span {
    tracing::info_span!(
        target: crate::spans::TARGET,
        "workflow",
        otel.name = %format_args!("{} {}", INVOKE_WORKFLOW, WORKFLOW),
        gen_ai.operation.name = INVOKE_WORKFLOW,
        gen_ai.workflow.name = WORKFLOW,
        gen_ai.conversation.id = conversation,
        run_id = %run_id,
        status = tracing::field::Empty,
        input.value = tracing::field::Empty,
        output.value = tracing::field::Empty,
        outcome = tracing::field::Empty,
    )
}

/// Records a run's question, answer and status on its [`workflow`] span.
pub(crate) fn record_io(span: &tracing::Span, question: &str, answer: &str, status: &str) {
    span.record("status", status);
    if !span.is_disabled() {
        span.record("input.value", question);
        span.record("output.value", answer);
    }
}
