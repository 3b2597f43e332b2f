//! The rerank stage of a knowledge-base retrieval: the fused (or BM25) candidates are sent to
//! the reranker once, as a counted model call retried by the node's policy inside the budget,
//! and the best `limit` of its order are kept.
//!
//! A rerank that fails for good (a 4xx, a malformed answer, or transient failures past the
//! retries or the budget) does not fail the run: the retrieval keeps the fused order cut to
//! `limit`, logs a warning, and says so where a caller can see it: `metadata.retrieval` stays
//! `bm25` / `hybrid` (no `+rerank`) and the `kg_retrieval` step's details carry
//! `rerank_failed` with the error. Reranking is an improvement of an answer that retrieval
//! already supports, not a precondition of one.
use super::RagGraph;
use crate::engine::StepCtx;
use crate::knowledge::Document;
use crate::search::RetrievalError;
use crate::usage::estimate_tokens;
use crate::usage::Usage;

/// Candidates retrieved for the reranker to choose from (when the request asks for fewer).
pub(crate) const RERANK_CANDIDATES: usize = 20;

/// What the stage did.
pub(crate) enum Reranked {
    /// The documents in the reranker's order.
    Done(Vec<Document>),
    /// The fused order cut to the limit, and why the rerank failed.
    FellBack(Vec<Document>, String),
}

/// Reranks `candidates` for `query`, keeping `limit`.
pub(crate) async fn rerank(
    graph: &RagGraph,
    ctx: &StepCtx<'_>,
    query: &str,
    mut candidates: Vec<Document>,
    limit: usize,
) -> Reranked {
    let Some(reranker) = &graph.reranker else {
        candidates.truncate(limit);
        return Reranked::Done(candidates);
    };
    if candidates.is_empty() {
        return Reranked::Done(candidates);
    }
    let texts: Vec<String> = candidates
        .iter()
        .map(|d| format!("{}\n\n{}", d.title, d.content))
        .collect();
    let outcome = ctx
        .retry("rerank", || async {
            let ranked = reranker
                .rerank(query, &texts, limit, ctx.remaining())
                .await?;
            let tokens =
                texts.iter().map(|t| estimate_tokens(t)).sum::<u64>() + estimate_tokens(query);
            ctx.meter().charge(&Usage {
                prompt_tokens: tokens,
                estimated: true,
                model_calls: 1,
                ..Usage::default()
            });
            Ok::<_, RetrievalError>(ranked)
        })
        .await;
    match outcome {
        Ok(ranked) => {
            let mut slots: Vec<Option<Document>> = candidates.into_iter().map(Some).collect();
            let docs = ranked
                .into_iter()
                .filter_map(|r| {
                    let mut doc = slots.get_mut(r.index)?.take()?;
                    doc.score = r.score;
                    Some(doc)
                })
                .take(limit)
                .collect();
            Reranked::Done(docs)
        }
        Err(error) => {
            tracing::warn!(%error, "rerank failed; keeping the fused order");
            candidates.truncate(limit);
            Reranked::FellBack(candidates, error.to_string())
        }
    }
}
