//! `bounded-rag kb search QUERY`: the knowledge store the functions would search (`KB_URI`,
//! `KB_PATH` or the bundled sample), searched directly, without the workflow or a model. Shows
//! what retrieval returns for a query and a filter on any store, and is how the stores are
//! compared (tests/kb_store_conformance.rs).
use crate::config::Settings;
use crate::entry::app::{build_embedder, build_kb, load_secrets};
use crate::search::{Filter, Place, Ranking, RetrievalMode, RetrievalOptions};
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
    /// Show why each passage ranked where it did: its BM25 and vector rank and score, the
    /// weights fusion gave the two rankings, its fused score and rank, and the rule that kept
    /// it (in `--json`, each document's `ranking`).
    #[arg(long)]
    explain: bool,
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
    let vector = match (embedder, kb.embedding()) {
        (Some(embedder), Some(info)) => {
            let input = [format!("{}{}", info.query_prefix, args.query)];
            let out = embedder
                .embed(&input, std::time::Duration::from_secs(60))
                .await
                .map_err(|e| format!("embedding the query failed: {e}"))?;
            Some(out.vectors.into_iter().next().unwrap_or_default())
        }
        _ => None,
    };
    let mode = match vector {
        Some(_) => RetrievalMode::Hybrid,
        None => RetrievalMode::Bm25,
    };
    let found = kb
        .explain(&args.query, vector.as_deref(), &options)
        .await
        .map_err(|e| format!("search failed: {e}"))?;
    if args.json {
        let documents = found
            .iter()
            .map(|e| {
                let mut doc = serde_json::to_value(&e.document).map_err(|e| e.to_string())?;
                if args.explain {
                    doc["ranking"] = serde_json::to_value(&e.ranking).map_err(|e| e.to_string())?;
                }
                Ok(doc)
            })
            .collect::<Result<Vec<_>, String>>()?;
        let out = json!({ "mode": mode.as_str(), "documents": documents });
        return serde_json::to_string_pretty(&out).map_err(|e| e.to_string());
    }
    let mut out = format!("{} results ({})", found.len(), mode.as_str());
    for (i, e) in found.iter().enumerate() {
        let d = &e.document;
        out.push_str(&format!(
            "\n[{}] {:.4} {}{} <{}>",
            i + 1,
            d.score,
            d.title,
            if d.clear_match { " (clear match)" } else { "" },
            d.url
        ));
        if args.explain {
            out.push_str("\n    ");
            out.push_str(&explanation(e.ranking.as_ref()));
        }
    }
    Ok(out)
}

/// One passage's ranking on a line: `bm25 #1 25.90 · vector #38 0.412 · weights …`.
fn explanation(ranking: Option<&Ranking>) -> String {
    let Some(r) = ranking else {
        return "ranked by the store itself (no explanation)".into();
    };
    let place = |name: &str, p: Option<Place>, digits: usize| match p {
        Some(p) => format!("{name} #{} {:.digits$}", p.rank, p.score),
        None => format!("{name} -"),
    };
    let mut parts = vec![place("bm25", r.bm25, 2)];
    if let Some(w) = r.weights {
        parts.push(place("vector", r.vector, 3));
        parts.push(format!(
            "weights bm25 {:.2} (lead {:.2} x agreement {:.2}), vector {:.0}",
            w.bm25, w.bm25_lead, w.agreement, w.vector
        ));
    }
    let rank = r.rank.map_or("-".to_owned(), |n| format!("#{n}"));
    parts.push(format!("score {:.4} ({rank})", r.score));
    parts.push(format!("kept by {}", r.kept_by.as_str()));
    parts.join(" · ")
}
