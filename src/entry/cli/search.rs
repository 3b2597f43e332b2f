//! `bounded-rag kb search QUERY`: the knowledge store the functions would search (`KB_URI`,
//! `KB_PATH` or the bundled sample), searched directly, without the workflow or a model. Shows
//! what retrieval returns for a query and a filter on any store, and is how the stores are
//! compared (tests/kb_store_conformance.rs).
use crate::config::Settings;
use crate::entry::app::{build_embedder, build_kb, load_secrets};
use crate::search::{Filter, RetrievalMode, RetrievalOptions};
use clap::Args;
use serde_json::json;

/// `kb search`'s arguments.
#[derive(Debug, Args)]
pub(crate) struct SearchArgs {
    /// What to search for.
    query: String,
    /// Most documents returned (1..=50).
    #[arg(long, default_value_t = 5)]
    limit: usize,
    /// Only documents whose metadata KEY equals VALUE (repeatable: all must hold).
    #[arg(long = "filter", value_name = "KEY=VALUE", value_parser = super::args::parse_filter)]
    filters: Vec<(String, String)>,
    /// A whole filter tree, as the API's `filters` field (JSON); combined with --filter.
    #[arg(long, value_name = "JSON")]
    filters_json: Option<String>,
    /// Search only text passages (no entities, relations or communities).
    #[arg(long)]
    passages_only: bool,
    /// Search communities too (a request's `community_retrieval`).
    #[arg(long, conflicts_with = "passages_only")]
    communities: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `kb search`; returns what to print.
pub(crate) async fn search_command(args: SearchArgs) -> Result<String, String> {
    if !(1..=50).contains(&args.limit) {
        return Err(format!("--limit {}: expected 1..=50", args.limit));
    }
    let mut filter = args
        .filters
        .iter()
        .map(|(key, value)| Filter::equals(key, value))
        .reduce(Filter::and);
    if let Some(text) = &args.filters_json {
        let tree: Filter =
            serde_json::from_str(text).map_err(|e| format!("--filters-json: {e}"))?;
        filter = Some(match filter {
            Some(f) => f.and(tree),
            None => tree,
        });
    }
    if let Some(f) = &filter {
        f.validate("filters")
            .map_err(|e| format!("invalid filter: {e}"))?;
    }
    let options = RetrievalOptions {
        limit: args.limit,
        nodes: !args.passages_only,
        edges: !args.passages_only,
        episodes: true,
        communities: args.communities,
        filter,
    };
    let settings = Settings::from_env().map_err(|e| e.to_string())?;
    let aws = match settings.kb_uri {
        Some(_) => Some(crate::tls::aws_sdk_config().await),
        None => None,
    };
    let kb = build_kb(&settings, aws.as_ref())
        .await
        .map_err(|e| e.to_string())?;
    let secrets = load_secrets(&settings).await.map_err(|e| e.to_string())?;
    let embedder = build_embedder(&settings, &secrets, aws.as_ref())
        .await
        .map_err(|e| e.to_string())?;
    let (mode, documents) = match (embedder, kb.embedding()) {
        (Some(embedder), Some(info)) => {
            let input = [format!("{}{}", info.query_prefix, args.query)];
            let out = embedder
                .embed(&input, std::time::Duration::from_secs(60))
                .await
                .map_err(|e| format!("embedding the query failed: {e}"))?;
            let vector = out.vectors.into_iter().next().unwrap_or_default();
            let docs = kb.retrieve_hybrid(&args.query, &vector, &options).await;
            (RetrievalMode::Hybrid, docs)
        }
        _ => (
            RetrievalMode::Bm25,
            kb.retrieve(&args.query, &options).await,
        ),
    };
    let documents = documents.map_err(|e| format!("search failed: {e}"))?;
    if args.json {
        let out = json!({ "mode": mode.as_str(), "documents": documents });
        return serde_json::to_string_pretty(&out).map_err(|e| e.to_string());
    }
    let mut out = format!("{} results ({})", documents.len(), mode.as_str());
    for (i, d) in documents.iter().enumerate() {
        out.push_str(&format!(
            "\n[{}] {:.4} {}{} <{}>",
            i + 1,
            d.score,
            d.title,
            if d.clear_match { " (clear match)" } else { "" },
            d.url
        ));
    }
    Ok(out)
}
