//! The two nodes that fetch documents: the knowledge-base search (BM25 or hybrid, with the
//! question's embedding) and web search, each in its GenAI span with the documents it found.

use super::kb_search::{retrieved, search, Searched};
use super::nodes::{decide_to_generate, same_passages, Step};
use super::{RagGraph, RagNode, RagState};
use crate::engine::{StepCtx, StepOutput};
use crate::genai;
use serde_json::json;
use tracing::Instrument;

pub(super) async fn kg_retrieval(
    graph: &RagGraph,
    state: &mut RagState,
    ctx: &StepCtx<'_>,
) -> Step {
    let Searched {
        documents,
        mode,
        rerank_failed,
    } = search(graph, state, ctx, &state.query).await?;
    state.retrieval = Some(mode);
    state.kb_version = graph.kb_version();
    let found_now = super::state::passages_fingerprint(&documents);
    let rewritten = state.route.is_some() && state.query_transformation_retry_count > 0;
    if rewritten && found_now.is_some() && found_now == state.retrieved {
        // The rewrite found what the search before it found: grading those passages again,
        // or rewriting once more in the same words, would waste calls. The loop ends here.
        // (A search that found nothing is not compared: another rewrite may find something.)
        let mut details = json!({ "query": state.query, "documents": documents.len() });
        if state.query_is_answer && state.documents.is_empty() {
            // The model's own hypothetical answer found what it graded away: a clear match
            // for its words is kept ([`super::overrule::rewrites_find`]), not graded again.
            let mut keep = vec![false; documents.len()];
            if let Some(found) = super::overrule::rewrites_find(&documents, &mut keep, &state.query)
            {
                state.documents = documents;
                state.set_aside(&keep);
                state.model_doubted = true;
                details["same_passages"] = json!(true);
                details["overruled"] = found;
                details["decision"] = json!("generate");
                return Ok(StepOutput::next(RagNode::Generate, details));
            }
        }
        return Ok(same_passages(state, details));
    }
    state.retrieved = found_now;
    let found = documents.len();
    let sources: Vec<&str> = documents.iter().map(|d| d.url.as_str()).collect();
    let from_graph = documents.iter().filter(|d| d.from_graph).count();
    let mut details = json!({
        "query": state.query,
        "documents": found,
        "from_graph": from_graph,
        "retrieval": mode,
        "sources": sources,
    });
    if let Some(error) = rerank_failed {
        details["rerank_failed"] = json!(error);
    }
    state.documents = documents;
    state.graded_out.clear();
    if state.route.is_none() {
        // Searched before routing: route, grade and answer at once over what was found.
        details["speculative"] = json!(true);
        return Ok(StepOutput::next(RagNode::Speculate, details));
    }
    if state.request.grade_documents() {
        return Ok(StepOutput::next(RagNode::GradeDocuments, details));
    }
    let (next, decision) = decide_to_generate(graph, state, found);
    details["decision"] = json!(decision);
    Ok(StepOutput::next(next, details))
}

pub(super) async fn web_search(graph: &RagGraph, state: &mut RagState, ctx: &StepCtx<'_>) -> Step {
    if state.person.consent(crate::config::Gated::WebSearch) == Some(false) {
        return Ok(web_search_denied(state));
    }
    let Some(web) = &graph.web else {
        tracing::warn!("web search wanted but not configured (WEB_SEARCH_BASE_URL unset)");
        state.web_search_unavailable = true;
        state.documents.clear();
        state.graded_out.clear();
        return Ok(StepOutput::next(
            RagNode::Generate,
            json!({ "configured": false, "fallback": state.web_fallback, "results": 0 }),
        ));
    };
    let query = state.query.as_str();
    let max_results = state.request.n_web_searches as usize;
    let span = genai::web_search(max_results, query);
    let results = ctx
        .retry("web_search", || {
            web.search(query, max_results, ctx.remaining())
                .instrument(span.clone())
        })
        .await;
    genai::record_outcome(&span, crate::error::outcome(&results));
    let results = results?;
    genai::record_documents(&span, results.iter().map(retrieved));
    drop(span);
    let found = results.len();
    state.documents = results;
    state.graded_out.clear();
    Ok(StepOutput::next(
        RagNode::Generate,
        json!({ "configured": true, "fallback": state.web_fallback, "results": found }),
    ))
}

/// Web search without the consent it waits for (`APPROVE_STEPS`): nothing leaves the
/// deployment. A question routed to the web goes to the knowledge base instead; the fallback
/// after the rewrites answers with no sources, as when web search is not configured.
fn web_search_denied(state: &mut RagState) -> StepOutput<RagNode> {
    tracing::info!("web search not approved: going on without it");
    if !state.web_fallback && state.route == Some(crate::llm::DataSource::WebSearch) {
        state.route = Some(crate::llm::DataSource::KgRetrieval);
        return StepOutput::next(
            RagNode::KgRetrieval,
            json!({ "approved": false, "then": "kg_retrieval" }),
        );
    }
    state.documents.clear();
    state.graded_out.clear();
    StepOutput::next(
        RagNode::Generate,
        json!({ "approved": false, "fallback": state.web_fallback, "results": 0 }),
    )
}
