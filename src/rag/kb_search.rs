//! One knowledge-base search with the run's retrieval options (filters, the tenant's pin, the
//! reranker's candidates; BM25 or hybrid with the query's embedding), in its GenAI span with
//! the documents it found. The question's search (`kg_retrieval`) and the search with a
//! written answer ([`super::research`]) both go through it.

use super::rerank::Reranked;
use super::{RagError, RagGraph, RagState};
use crate::engine::StepCtx;
use crate::genai;
use crate::knowledge::Document;
use crate::search::{RetrievalError, RetrievalMode};
use tracing::Instrument;

/// What one knowledge-base search found.
pub(super) struct Searched {
    pub(super) documents: Vec<Document>,
    pub(super) mode: RetrievalMode,
    /// Why the reranker's order was not used, when it failed.
    pub(super) rerank_failed: Option<String>,
}

/// Searches the knowledge base for `query` with the run's retrieval options (filters, the
/// tenant's pin, the reranker's candidates), in its GenAI span: the question's search and the
/// search with a written answer ([`super::research`]) go through it.
pub(super) async fn search(
    graph: &RagGraph,
    state: &RagState,
    ctx: &StepCtx<'_>,
    query: &str,
) -> Result<Searched, RagError> {
    let mut options = state.request.retrieval_options();
    let key = graph.tenant_key.as_deref();
    options.filter = super::tenant::pinned(options.filter.take(), key, &state.caller);
    // With a reranker, more candidates to choose the best `limit` from.
    let limit = options.limit;
    if graph.reranker.is_some() {
        options.limit = limit.max(super::rerank::RERANK_CANDIDATES);
    }
    let mode = graph.retrieval_mode();
    let data_source = graph.kb_version().unwrap_or_else(|| "kb".to_owned());
    let span = genai::retrieval(&data_source, mode.as_str(), options.limit, query);
    let documents = match (&graph.embedder, mode) {
        (Some(embedder), RetrievalMode::Hybrid) => {
            // One embeddings call per retrieval, metered like any model call and retried by
            // the node's policy inside the budget. The query gets the bundle's recorded
            // prefix (`query: ` for E5): the one its passages were embedded to match.
            let prefix = graph
                .kb
                .embedding()
                .map(|e| e.query_prefix)
                .unwrap_or_default();
            let input = [format!("{prefix}{query}")];
            let embedded = ctx
                .retry("embed_query", || async {
                    let span = genai::embeddings(embedder.provider(), embedder.model(), 1);
                    let out = embedder
                        .embed(&input, ctx.remaining())
                        .instrument(span.clone())
                        .await;
                    if let Ok(out) = &out {
                        ctx.meter().charge(&out.usage);
                        genai::record_embedded(&span, &out.usage, out.vectors.first());
                    }
                    genai::record_outcome(&span, crate::error::outcome(&out));
                    Ok::<_, RetrievalError>(out?)
                })
                .await?;
            let vector = embedded.vectors.into_iter().next().unwrap_or_default();
            // A remote store's transient failure is retried by the node's policy; a local
            // index's errors are permanent and never retried.
            ctx.retry("retrieve", || {
                graph.kb.retrieve_hybrid(query, &vector, &options)
            })
            .instrument(span.clone())
            .await
        }
        _ => {
            ctx.retry("retrieve", || graph.kb.retrieve(query, &options))
                .instrument(span.clone())
                .await
        }
    };
    genai::record_outcome(&span, crate::error::outcome(&documents));
    let documents = documents?;
    let (documents, mode, rerank_failed) =
        match super::rerank::rerank(graph, ctx, query, documents, limit).await {
            // Nothing found, nothing reranked: the mode says what ran.
            Reranked::Done(docs) if graph.reranker.is_some() && !docs.is_empty() => {
                (docs, mode.reranked(), None)
            }
            Reranked::Done(docs) => (docs, mode, None),
            Reranked::FellBack(docs, error) => (docs, mode, Some(error)),
        };
    genai::record_documents(&span, documents.iter().map(retrieved));
    drop(span);
    Ok(Searched {
        documents,
        mode,
        rerank_failed,
    })
}

/// A retrieved document as its span records it.
pub(super) fn retrieved(d: &Document) -> genai::Retrieved<'_> {
    genai::Retrieved {
        id: &d.id,
        source: &d.url,
        score: d.score,
        content: &d.content,
    }
}
